"""What grade_batch returns: the server's JSON as dicts (so ``batch["results"][0]["score"]`` keeps
working), with typed attributes read from it: ``batch.results[0].outcome``, ``.score``,
``.abstained.code``, ``batch.components``, ``batch.summary``."""

from __future__ import annotations

from typing import Any, Literal, NamedTuple, cast

from .types import BatchSummary, Provenance

__all__ = ["Abstained", "BatchResult", "Outcome", "Result", "ResultError"]

#: what a result is: a score, an error (the grader failed) or an abstention (no score is honest)
Outcome = Literal["scored", "error", "abstained"]


class Abstained(NamedTuple):
    """Why a thread has no score and no error: ``code`` is one of errors.ABSTAIN_CODES
    (GRADER_ABSTAINED, DEADLINE_EXCEEDED, JUDGE_UNAVAILABLE, ENDPOINT_UNAVAILABLE,
    ALL_PARTS_ABSTAINED); ``reason`` says it in words."""

    code: str
    reason: str

    @classmethod
    def from_wire(cls, value: object) -> Abstained:
        value = value if isinstance(value, dict) else {}
        code, reason = value.get("code"), value.get("reason")
        return cls(code if isinstance(code, str) else "GRADER_ABSTAINED", reason if isinstance(reason, str) else "")


class ResultError(NamedTuple):
    """Why one thread could not be graded: ``code`` is one of errors.GRADE_ERROR_CODES; ``line``
    and ``column`` say where a GRADER_ERROR was thrown, when known."""

    code: str
    message: str
    line: int | None = None
    column: int | None = None


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class Result(dict[str, Any]):
    """One thread's result: the server's JSON (``{"outcome": "scored", "score": …}``,
    ``{"outcome": "error", "error": {…}}`` or ``{"outcome": "abstained", "abstained": {…}}``),
    with typed attributes. ``score`` is None unless the outcome is "scored"; ``error`` unless it
    is "error"; ``abstained`` unless it is "abstained"."""

    @property
    def outcome(self) -> Outcome:
        outcome = self.get("outcome")
        if outcome in ("scored", "error", "abstained"):
            return cast(Outcome, outcome)
        # a server from before outcomes: an error or a score
        return "error" if "error" in self else "abstained" if "abstained" in self else "scored"

    @property
    def score(self) -> float | None:
        score = self.get("score") if self.outcome == "scored" else None
        return float(score) if isinstance(score, (int, float)) and not isinstance(score, bool) else None

    @property
    def reason(self) -> str | None:
        reason = self.get("reason")
        return reason if isinstance(reason, str) else None

    @property
    def metadata(self) -> dict[str, Any] | None:
        metadata = self.get("metadata")
        return metadata if isinstance(metadata, dict) else None

    @property
    def subscores(self) -> list[Any] | None:
        subscores = self.get("subscores")
        return subscores if isinstance(subscores, list) else None

    @property
    def error(self) -> ResultError | None:
        if self.outcome != "error":
            return None
        error = self.get("error")
        error = error if isinstance(error, dict) else {}
        code, message = error.get("code"), error.get("message")
        return ResultError(
            code if isinstance(code, str) else "GRADER_ERROR",
            message if isinstance(message, str) else "",
            _int(error.get("line")),
            _int(error.get("column")),
        )

    @property
    def abstained(self) -> Abstained | None:
        return Abstained.from_wire(self.get("abstained")) if self.outcome == "abstained" else None

    def __repr__(self) -> str:
        return f"Result({dict.__repr__(self)})"


class BatchResult(dict[str, Any]):
    """POST …/grade-batch's answer: the server's JSON (``results``, ``durationMs``, ``version``,
    ``provenance``, and ``components``, ``summary``, ``deadlineExceeded`` when there are), with
    typed attributes. When the client split the batch into several requests, it merged their
    answers: ``durationMs`` is the server's time summed, ``components`` are aligned with all the
    results, ``summary`` is computed here from the merged results (gradebox._summary) and
    ``deadlineExceeded`` counts every request's."""

    @property
    def results(self) -> list[Result]:
        return cast("list[Result]", self["results"])

    @property
    def duration_ms(self) -> float:
        return float(self.get("durationMs", 0.0))

    @property
    def version(self) -> int:
        return int(self["version"])

    @property
    def provenance(self) -> Provenance | None:
        """Which grader, version and source digest produced the results (None from a server
        that does not say)."""
        return cast("Provenance | None", self.get("provenance"))

    @property
    def components(self) -> dict[str, list[float | None]]:
        """The named parts of the scores, each a list aligned with ``results`` (None where a
        result has no such part); empty when no result has named parts."""
        return cast("dict[str, list[float | None]]", self.get("components") or {})

    @property
    def summary(self) -> BatchSummary | None:
        """With ``summary=`` in the call: counts by outcome, mean, spread, quantiles, histogram
        (and group statistics when grouped)."""
        return cast("BatchSummary | None", self.get("summary"))

    @property
    def deadline_exceeded(self) -> int:
        """How many threads the deadline left unfinished (abstained with DEADLINE_EXCEEDED)."""
        return int(self.get("deadlineExceeded") or 0)

    def scores(self) -> list[float | None]:
        """Each result's score, None for an error or an abstention."""
        return [r.score for r in self.results]

    def __repr__(self) -> str:
        return f"BatchResult({dict.__repr__(self)})"
