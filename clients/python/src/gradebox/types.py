"""Wire types of the HTTP API, as the client returns them: plain dicts (JSON as the server sent
it, camelCase keys included), typed with TypedDicts. Each is the OpenAPI document's schema of the
same name (GraderWithSource: GraderDetail; Thread, Turn and Role: ThreadInput, TurnInput and
RoleInput): test/python-types.test.ts holds their fields, optionality and types to it."""

from __future__ import annotations

from typing import Any, Literal, TypedDict, get_args

__all__ = [
    "GradeBatchResponse",
    "GradeError",
    "GradeResponse",
    "GradeResult",
    "GradeScore",
    "Grader",
    "GraderPage",
    "Language",
    "GraderWithSource",
    "Limits",
    "Role",
    "Secret",
    "Thread",
    "Turn",
]

Role = Literal["system", "user", "assistant", "tool", "document"]
ROLES: tuple[str, ...] = get_args(Role)

#: what a function grader's source is written in (each version records its own)
Language = Literal["typescript", "python"]
LANGUAGES: tuple[str, ...] = get_args(Language)


class Turn(TypedDict):
    role: Role
    content: str


class _ThreadBase(TypedDict):
    turns: list[Turn]


class Thread(_ThreadBase, total=False):
    """A thread as it travels over HTTP: ``{"turns": [{"role", "content"}], "metadata": {...}}``."""

    metadata: dict[str, Any]


class _GraderBase(TypedDict):
    project: str
    key: str
    kind: Literal["function", "combined", "judge", "endpoint"]
    version: int
    description: str
    locked: bool
    quarantinedAt: str | None
    recentFaults: int
    warnings: list[str]
    sourceSha256: str
    createdAt: str
    updatedAt: str


class Grader(_GraderBase, total=False):
    """One grader as list/lock return it (``language`` on function graders only, ``mode`` on
    combined graders only)."""

    language: Language
    mode: Literal["weighted", "any", "all"]


class GraderWithSource(Grader, total=False):
    """One grader in full, as create/get return it: a function grader's ``source``, a combined
    grader's ``parts``, a judge's or an endpoint's definition."""

    source: str
    parts: list[dict[str, Any]]
    judge: dict[str, Any]
    endpoint: dict[str, Any]


class GraderPage(TypedDict):
    data: list[Grader]
    nextCursor: str | None


class _GradeScoreBase(TypedDict):
    score: float


class GradeScore(_GradeScoreBase, total=False):
    """A score, and what the grader said about it."""

    reason: str
    metadata: dict[str, Any]
    subscores: list[dict[str, Any]]


class _GradeErrorBase(TypedDict):
    code: str
    message: str


class GradeError(_GradeErrorBase, total=False):
    """Why one item got no score (``code`` is one of errors.GRADE_ERROR_CODES); ``line`` and
    ``column`` say where a GRADER_ERROR was thrown, when known."""

    line: int
    column: int


class GradeResult(TypedDict, total=False):
    """One item of a batch: either a score (``score``, and ``reason``, ``metadata``,
    ``subscores`` when the grader gave them) or ``error`` (why the item got no score)."""

    score: float
    reason: str
    metadata: dict[str, Any]
    subscores: list[dict[str, Any]]
    error: GradeError


class GradeResponse(GradeScore):
    """POST …/grade: the score, the server's time, and the version that graded it."""

    durationMs: float
    version: int


class GradeBatchResponse(TypedDict):
    """POST …/grade-batch: results in input order. When the client split the batch into chunks,
    ``durationMs`` is the server's time summed over the chunks."""

    results: list[GradeResult]
    durationMs: float
    version: int


class Limits(TypedDict):
    """GET /v1/limits: the limits a client must fit its requests in."""

    maxBatchThreads: int
    maxBodyBytes: int
    maxTurns: int
    maxContentChars: int
    maxSourceBytes: int
    maxSamples: int
    timeoutMs: int
    memoryMb: int


class Secret(TypedDict):
    """A project secret (``client.secrets``): its value is never returned."""

    name: str
    #: the host its value is sent to, bound by the first model or endpoint that uses it; None until then
    host: str | None
    createdAt: str
    #: when the value was last set
    updatedAt: str
