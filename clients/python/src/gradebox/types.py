"""Wire types of the HTTP API, as the client returns them: plain dicts (JSON as the server sent
it, camelCase keys included), typed with TypedDicts. Each is the OpenAPI document's schema of the
same name (GraderWithSource: GraderDetail; Thread, Turn and Role: ThreadInput, TurnInput and
RoleInput): test/python-types.test.ts holds their fields, optionality and types to it."""

from __future__ import annotations

from typing import Any, Literal, TypedDict, get_args

__all__ = [
    "Abstention",
    "BatchSummary",
    "GradeBatchResponse",
    "GradeError",
    "GradeResponse",
    "GradeResult",
    "GradeScore",
    "Grader",
    "GraderPage",
    "GroupSummary",
    "Histogram",
    "Language",
    "PartProvenance",
    "Provenance",
    "GraderWithSource",
    "Limits",
    "Role",
    "Secret",
    "Thread",
    "Turn",
]

KnownRole = Literal["system", "user", "assistant", "tool", "document"]
# the roles Gradebox names; any other of 1 to 64 characters without control characters passes
# through as sent (thread.is_role)
ROLES: tuple[str, ...] = get_args(KnownRole)
Role = str

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
    kind: Literal["function", "combined", "judge", "endpoint", "code"]
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
    grader's ``parts``, a judge's, an endpoint's or a code grader's definition."""

    source: str
    parts: list[dict[str, Any]]
    judge: dict[str, Any]
    endpoint: dict[str, Any]
    code: dict[str, Any]


class GraderPage(TypedDict):
    data: list[Grader]
    nextCursor: str | None


class _GradeScoreBase(TypedDict):
    outcome: Literal["scored"]
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


class Abstention(TypedDict):
    """Why a thread has neither a score nor an error (``code`` is one of errors.ABSTAIN_CODES)."""

    code: str
    reason: str


class _GradeResultBase(TypedDict):
    outcome: Literal["scored", "error", "abstained"]


class GradeResult(_GradeResultBase, total=False):
    """One item of a batch, as ``outcome`` says: "scored" (``score``, and ``reason``,
    ``metadata``, ``subscores`` when the grader gave them), "error" (``error``: why the item got
    no score) or "abstained" (``abstained``: why no score is honest for it)."""

    score: float
    reason: str
    metadata: dict[str, Any]
    subscores: list[Any]
    error: GradeError
    abstained: Abstention


class _ProvenanceBase(TypedDict):
    grader: str
    kind: Literal["function", "combined", "judge", "endpoint", "code"]
    version: int
    sourceSha256: str


class PartProvenance(_ProvenanceBase, total=False):
    """Which grader, at which version and source digest, graded a part of a combined grader."""

    language: Language
    model: str
    templateSha256: str
    endpointVersion: str


class Provenance(PartProvenance, total=False):
    """Which grader, at which version and source digest, produced the results (``language``
    for function graders; ``model`` and ``templateSha256`` for judges; ``endpointVersion`` for
    endpoints; ``parts`` for combined graders)."""

    parts: list[PartProvenance]


class Histogram(TypedDict):
    """A fixed-bin histogram of the scores: ``edges`` (bins + 1, ascending; the last bin
    includes its upper edge) and ``counts`` per bin."""

    edges: list[float]
    counts: list[int]


class _GroupSummaryBase(TypedDict):
    groups: int
    k: int
    meanOfBest: float | None
    meanOfMeans: float | None


class GroupSummary(_GroupSummaryBase, total=False):
    """Statistics over a batch's groups (``passAtK`` with a threshold, ``majorityAtK`` with a
    threshold and an answer key)."""

    passAtK: float | None
    majorityAtK: float | None


class _BatchSummaryBase(TypedDict):
    count: int
    outcomes: dict[str, int]
    mean: float | None
    std: float | None
    sem: float | None
    min: float | None
    max: float | None
    quantiles: dict[str, float] | None
    histogram: Histogram | None


class BatchSummary(_BatchSummaryBase, total=False):
    """The distribution of a batch's scores: counts by outcome, mean, population standard
    deviation, standard error, min/max, quantiles p5…p95, histogram (None where there are no
    scores), and ``groups`` when the batch was grouped."""

    groups: GroupSummary


class GradeResponse(GradeScore):
    """POST …/grade: the score (``outcome`` is always "scored": an error or an abstention is an
    exception), the server's time, the version that graded it and its provenance."""

    durationMs: float
    version: int
    provenance: Provenance


class _GradeBatchResponseBase(TypedDict):
    results: list[GradeResult]
    durationMs: float
    version: int
    provenance: Provenance


class GradeBatchResponse(_GradeBatchResponseBase, total=False):
    """POST …/grade-batch as the server answers it (grade_batch returns it as a
    gradebox.BatchResult): results in input order, ``components`` aligned with them when any
    result has named parts, ``summary`` when asked for, ``deadlineExceeded`` with a deadline."""

    components: dict[str, list[float | None]]
    summary: BatchSummary
    deadlineExceeded: int


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
