"""Gradebox: a Python client for function graders (standard library only).

from gradebox import Gradebox
client = Gradebox()  # GRADEBOX_URL, GRADEBOX_PROJECT, GRADEBOX_API_KEY
client.graders.create.function(key="exact-match", fn=grade, description="...")  # a top-level async def
client.graders.grade("exact-match", {"turns": [...], "metadata": {...}})
client.secrets.set("openai-key", os.environ["OPENAI_API_KEY"])  # for a model's apiKeySecret

reward_fn = gradebox.reward_function("exact-match")  # for TRL's GRPOTrainer(reward_funcs=...)

``StringThread`` and ``gradebox.graders`` are the sandbox's own (the same files), so a grader
runs here as it runs there: ``await grade(StringThread([("user", "2+2?"), ("assistant", "4")]))``.
"""

from __future__ import annotations

from collections.abc import Sequence

from . import graders
from ._version import __version__
from .client import Gradebox, Graders, Secrets
from .errors import (
    GRADE_ERROR_CODES,
    APIConnectionError,
    APIError,
    APITimeoutError,
    AuthenticationError,
    BadRequestError,
    ConflictError,
    GradeboxError,
    GraderRuntimeError,
    GraderValidationError,
    InternalServerError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    UnprocessableEntityError,
)
from .reward import OnError, RewardFunction, build_threads
from ._source import function_source, language_of_file
from .thread import StringThread
from .types import (
    GradeBatchResponse,
    GradeError,
    Grader,
    GradeResponse,
    GradeResult,
    GraderPage,
    Language,
    Role,
    GraderWithSource,
    GradeScore,
    Limits,
    Secret,
    Thread,
    Turn,
)

__all__ = [
    "GRADE_ERROR_CODES",
    "APIConnectionError",
    "APIError",
    "APITimeoutError",
    "AuthenticationError",
    "BadRequestError",
    "ConflictError",
    "GradeBatchResponse",
    "GradeError",
    "GradeResponse",
    "GradeResult",
    "GradeScore",
    "Gradebox",
    "GradeboxError",
    "Grader",
    "GraderPage",
    "GraderRuntimeError",
    "GraderValidationError",
    "GraderWithSource",
    "Graders",
    "InternalServerError",
    "Language",
    "Limits",
    "NotFoundError",
    "OnError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "RewardFunction",
    "Role",
    "Secret",
    "Secrets",
    "StringThread",
    "Thread",
    "Turn",
    "UnprocessableEntityError",
    "__version__",
    "build_threads",
    "function_source",
    "graders",
    "language_of_file",
    "reward_function",
]


def reward_function(
    key: str,
    client: Gradebox | None = None,
    *,
    version: int | None = None,
    on_error: OnError = "raise",
    columns: Sequence[str] | None = None,
    name: str | None = None,
) -> RewardFunction:
    """``client.reward_function(key, …)``, with a client built from the environment
    (GRADEBOX_URL, GRADEBOX_PROJECT, GRADEBOX_API_KEY) when none is given."""
    return (client if client is not None else Gradebox()).reward_function(
        key, version=version, on_error=on_error, columns=columns, name=name
    )
