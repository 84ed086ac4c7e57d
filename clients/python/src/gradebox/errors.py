"""Error classes, mirroring the TypeScript SDK (sdk/errors.ts): one per HTTP status family, plus
the two a grader author meets most (GraderValidationError, GraderRuntimeError)."""

from __future__ import annotations

from typing import Any, Literal

from .results import Abstained

__all__ = [
    "ABSTAIN_CODES",
    "GRADE_ERROR_CODES",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "Check",
    "ConflictError",
    "GraderRuntimeError",
    "GraderValidationError",
    "GradeboxError",
    "GraderAbstainedError",
    "InternalServerError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "UnprocessableEntityError",
    "error_from_response",
]

Check = Literal["syntax", "structure", "signature", "execution", "test_run", "template", "endpoint"]


class GradeboxError(Exception):
    """The base of every error this package raises."""


class APIError(GradeboxError):
    """The server answered with an error (application/problem+json)."""

    status: int
    code: str
    request_id: str | None
    message: str
    body: dict[str, Any]

    def __init__(
        self,
        status: int,
        code: str,
        request_id: str | None,
        message: str,
        body: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.request_id = request_id
        self.message = message
        #: the whole problem document
        self.body = body if body is not None else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}(status={self.status}, code={self.code!r}, request_id={self.request_id!r}, message={self.message!r})"


class BadRequestError(APIError):
    pass


class AuthenticationError(APIError):
    pass


class PermissionDeniedError(APIError):
    pass


class NotFoundError(APIError):
    pass


class ConflictError(APIError):
    pass


class PayloadTooLargeError(APIError):
    pass


class UnprocessableEntityError(APIError):
    pass


class RateLimitError(APIError):
    pass


class InternalServerError(APIError):
    pass


def _int_or_none(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Positioned(UnprocessableEntityError):
    """A 422 whose body may say where in the grader's source (1-based) it happened.

    ``line``/``column``: where in the grader's source, or, for a grader registered with
    ``create.function(fn=…)``, where in the function's own file (None when the line is one the
    client wrote: an import taken from another notebook cell). ``source_line``/``source_column``:
    always the server's, in the source as sent."""

    # set by create.function(fn=…): (line, column) in the function's file
    _file_position: tuple[int | None, int | None] | None = None

    @property
    def line(self) -> int | None:
        return self._file_position[0] if self._file_position is not None else self.source_line

    @property
    def column(self) -> int | None:
        return self._file_position[1] if self._file_position is not None else self.source_column

    @property
    def source_line(self) -> int | None:
        return _int_or_none(self.body.get("line"))

    @property
    def source_column(self) -> int | None:
        return _int_or_none(self.body.get("column"))


class GraderValidationError(_Positioned):
    """One of the five checks refused the grader (422 VALIDATION_FAILED); nothing was saved."""

    @property
    def check(self) -> Check:
        return self.body.get("check")  # type: ignore[return-value]


class GraderRuntimeError(_Positioned):
    """The grader ran and failed: GRADER_ERROR, GRADER_TIMEOUT, GRADER_MEMORY_LIMIT, INVALID_SCORE,
    SANDBOX_CRASHED, COMPONENT_FAILED, … (see GRADE_ERROR_CODES).

    ``line``/``column``: for GRADER_ERROR, where in the grader's source (1-based) it was thrown,
    when known. ``index``: the item of a batch (or of a reward-function call) that failed, when
    the error stands for one item."""

    @property
    def index(self) -> int | None:
        return _int_or_none(self.body.get("index"))


class GraderAbstainedError(UnprocessableEntityError):
    """The grader (or the service, for it) abstained on the thread: 422 ABSTAINED from
    ``grade()``. An abstention is not a failure and not a zero: no score is honest for the thread.
    ``abstained``: its ``code`` (one of ABSTAIN_CODES: GRADER_ABSTAINED when the grader returned
    null / None or raised Abstain, JUDGE_UNAVAILABLE / ENDPOINT_UNAVAILABLE with
    ``on_unavailable="abstain"``, ALL_PARTS_ABSTAINED for a combined grader) and ``reason``."""

    @property
    def abstained(self) -> Abstained:
        return Abstained.from_wire(self.body.get("abstained"))


class APIConnectionError(GradeboxError):
    """No answer from the server: refused, reset, DNS, TLS…"""


class APITimeoutError(APIConnectionError):
    """The server did not answer within the client's timeout."""


#: Codes a grading call can end with instead of a score (the server's per-item error codes).
GRADE_ERROR_CODES: frozenset[str] = frozenset(
    {
        "GRADER_ERROR",
        "GRADER_TIMEOUT",
        "GRADER_MEMORY_LIMIT",
        "INVALID_SCORE",
        "SANDBOX_CRASHED",
        "COMPONENT_FAILED",
        "INVALID_THREAD",
        "JUDGE_UNAVAILABLE",
        "JUDGE_INVALID_OUTPUT",
        "EGRESS_DENIED",
        "INVALID_METADATA",
        "ENDPOINT_UNAVAILABLE",
        "ENDPOINT_INVALID_RESPONSE",
    }
)

#: Why a result is an abstention (``Abstained.code``): the server's ABSTAIN_CODES (sdk/errors.ts).
ABSTAIN_CODES: frozenset[str] = frozenset(
    {
        "GRADER_ABSTAINED",
        "DEADLINE_EXCEEDED",
        "JUDGE_UNAVAILABLE",
        "ENDPOINT_UNAVAILABLE",
        "ALL_PARTS_ABSTAINED",
        "RUNNER_UNAVAILABLE",
    }
)

#: the HTTP status /grade answers a grading error with (502 for upstream failures, else 422)
GRADE_ERROR_STATUS: dict[str, int] = {
    "JUDGE_UNAVAILABLE": 502,
    "JUDGE_INVALID_OUTPUT": 502,
    "ENDPOINT_UNAVAILABLE": 502,
    "ENDPOINT_INVALID_RESPONSE": 502,
}

_BY_STATUS: dict[int, type[APIError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    413: PayloadTooLargeError,
    422: UnprocessableEntityError,
    429: RateLimitError,
}


def error_from_response(status: int, body: dict[str, Any], request_id: str | None) -> APIError:
    """The error class for a problem document, as the TypeScript SDK's errorFromResponse picks it."""
    raw_code = body.get("code")
    code = raw_code if isinstance(raw_code, str) else f"HTTP_{status}"
    detail = body.get("detail")
    if not isinstance(detail, str):
        title = body.get("title")
        detail = title if isinstance(title, str) else f"HTTP {status}"
    message = f"{status} {code}: {detail}"
    if code == "VALIDATION_FAILED":
        return GraderValidationError(status, code, request_id, message, body)
    if code == "ABSTAINED":
        return GraderAbstainedError(status, code, request_id, message, body)
    if code in GRADE_ERROR_CODES:
        return GraderRuntimeError(status, code, request_id, message, body)
    cls = _BY_STATUS.get(status) or (InternalServerError if status >= 500 else APIError)
    return cls(status, code, request_id, message, body)
