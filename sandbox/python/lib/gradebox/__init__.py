"""gradebox, as a Python grader sees it inside the sandbox.

    from gradebox import StringThread
    from gradebox.graders import exact_match, combine, SubScore, Abstain

``StringThread`` is also importable from ``adaptive_harmony`` (Adaptive's graders import it from
there) and is defined in every grader's module without an import.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any, TypedDict, TypeVar

from . import graders
from .graders import Abstain
from .thread import ROLES, Role, StringThread, Turn

T = TypeVar("T")


class _GradeScoreBase(TypedDict):
    score: float


class GradeScore(_GradeScoreBase, total=False):
    """A result with more than a score (``reward`` is read as ``score`` too)."""

    reason: str
    metadata: dict[str, Any]
    subscores: list[Any]


async def gather(*aws: Awaitable[T]) -> list[T]:
    """``await gather(a, b)``: each awaitable awaited in turn, the results in order. The sandbox
    has no event loop, so ``asyncio.gather`` cannot run there; this gives the same results for
    coroutines that do not wait on timers or I/O."""
    return [await aw for aw in aws]


__all__ = ["ROLES", "Abstain", "GradeScore", "Role", "StringThread", "Turn", "gather", "graders"]
