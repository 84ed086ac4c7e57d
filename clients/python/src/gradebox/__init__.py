"""Gradebox: a Python client for function graders (standard library only).

from gradebox import Gradebox
client = Gradebox()  # GRADEBOX_URL, GRADEBOX_PROJECT, GRADEBOX_API_KEY
client.graders.create.function(key="exact-match", fn=grade, description="...")  # a top-level async def
client.graders.grade("exact-match", {"turns": [...], "metadata": {...}})
client.secrets.set("openai-key", os.environ["OPENAI_API_KEY"])  # for a model's apiKeySecret

batch = client.graders.grade_batch("exact-match", threads, deadline_ms=5000, summary=True)
batch.results[0].outcome  # "scored", "error" or "abstained"; batch.components, batch.provenance, batch.summary

reward_fn = gradebox.reward_function("exact-match")  # for TRL's GRPOTrainer(reward_funcs=...): None = no reward
async_reward_fn = gradebox.async_reward_function("exact-match")  # TRL gathers async ones concurrently

async with AsyncGradebox() as client:  # the same calls, awaited
    batch = await client.graders.grade_batch("exact-match", threads)

gradebox.verl.compute_score, gradebox.verifiers.reward: the adapters those trainers load by name;
gradebox.formats: OpenAI chat messages and TRL samples as threads.

``StringThread`` and ``gradebox.graders`` are the sandbox's own (the same files), so a grader
runs here as it runs there: ``await grade(StringThread([("user", "2+2?"), ("assistant", "4")]))``.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import graders
from .graders import Abstain as Abstain
from ._version import __version__
from .client import Gradebox, Graders, OnUnavailable, Secrets
from .async_client import AsyncGradebox, AsyncGraders, AsyncSecrets
from .formats import ThreadFormatError, from_messages, from_openai, from_trl, read_thread
from .errors import (
    ABSTAIN_CODES,
    GRADE_ERROR_CODES,
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GradeboxError,
    GraderAbstainedError,
    GraderRuntimeError,
    GraderValidationError,
    InternalServerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from .results import Abstained, BatchResult, Outcome, Result, ResultError
from .reward import AsyncRewardFunction, OnError, RewardFunction, build_threads
from ._source import function_source, language_of_file
from .thread import StringThread
from .types import (
    Abstention,
    BatchSummary,
    GradeBatchResponse,
    GradeError,
    Grader,
    GradeResponse,
    GradeResult,
    GraderPage,
    GroupSummary,
    Histogram,
    Language,
    PartProvenance,
    Provenance,
    Role,
    GraderWithSource,
    GradeScore,
    Limits,
    Secret,
    Thread,
    Turn,
)

__all__ = [
    "Abstain",
    "ABSTAIN_CODES",
    "GRADE_ERROR_CODES",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "Abstained",
    "Abstention",
    "AsyncGradebox",
    "AsyncGraders",
    "AsyncRewardFunction",
    "AsyncSecrets",
    "AuthenticationError",
    "BadRequestError",
    "BatchResult",
    "BatchSummary",
    "ConflictError",
    "GradeBatchResponse",
    "GradeError",
    "GradeResponse",
    "GradeResult",
    "GradeScore",
    "Gradebox",
    "GradeboxError",
    "Grader",
    "GraderAbstainedError",
    "GraderPage",
    "GraderRuntimeError",
    "GraderValidationError",
    "GraderWithSource",
    "Graders",
    "GroupSummary",
    "Histogram",
    "InternalServerError",
    "Language",
    "Limits",
    "NotFoundError",
    "OnError",
    "OnUnavailable",
    "Outcome",
    "PartProvenance",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "Provenance",
    "RateLimitError",
    "Result",
    "ResultError",
    "RewardFunction",
    "Role",
    "Secret",
    "Secrets",
    "StringThread",
    "Thread",
    "Turn",
    "UnprocessableEntityError",
    "ThreadFormatError",
    "__version__",
    "async_reward_function",
    "build_threads",
    "from_messages",
    "from_openai",
    "from_trl",
    "function_source",
    "graders",
    "language_of_file",
    "read_thread",
    "reward_function",
]


def reward_function(
    key: str,
    client: Gradebox | None = None,
    *,
    version: int | None = None,
    on_error: OnError = None,
    columns: Sequence[str] | None = None,
    name: str | None = None,
    deadline_ms: int | None = None,
    on_unavailable: OnUnavailable | None = None,
    group_by: str | None = None,
    as_float: bool = False,
) -> RewardFunction:
    """``client.reward_function(key, …)``, with a client built from the environment
    (GRADEBOX_URL, GRADEBOX_PROJECT, GRADEBOX_API_KEY) when none is given."""
    return (client if client is not None else Gradebox()).reward_function(
        key,
        version=version,
        on_error=on_error,
        columns=columns,
        name=name,
        deadline_ms=deadline_ms,
        on_unavailable=on_unavailable,
        group_by=group_by,
        as_float=as_float,
    )


def async_reward_function(
    key: str,
    client: AsyncGradebox | None = None,
    *,
    version: int | None = None,
    on_error: OnError = None,
    columns: Sequence[str] | None = None,
    name: str | None = None,
    deadline_ms: int | None = None,
    on_unavailable: OnUnavailable | None = None,
    group_by: str | None = None,
    as_float: bool = False,
) -> AsyncRewardFunction:
    """``client.reward_function(key, …)`` of an AsyncGradebox, built from the environment when
    none is given: the async reward function TRL gathers concurrently (failures None by default)."""
    return (client if client is not None else AsyncGradebox()).reward_function(
        key,
        version=version,
        on_error=on_error,
        columns=columns,
        name=name,
        deadline_ms=deadline_ms,
        on_unavailable=on_unavailable,
        group_by=group_by,
        as_float=as_float,
    )
