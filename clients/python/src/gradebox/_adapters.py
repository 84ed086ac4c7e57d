"""What the trainer adapters loaded by path (gradebox.verl, gradebox.verifiers) share: their
settings from the environment (a trainer that imports a file and calls a function by name
passes no arguments to build it), what an outcome becomes, and the one thread they grade."""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Union

from .client import OnUnavailable
from .errors import GRADE_ERROR_STATUS, GradeboxError, GraderAbstainedError, GraderRuntimeError
from .results import Result

__all__ = ["Mapping_", "Settings", "outcome_value"]

#: what an abstention or a failed item becomes: "raise" (an exception), or this reward
Mapping_ = Union[Literal["raise"], float]


def _number_or_raise(value: object, what: str) -> Mapping_:
    if value == "raise":
        return "raise"
    if isinstance(value, bool):
        raise ValueError(f'{what} must be "raise" or a finite number, not {value!r}')
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise ValueError(f'{what} must be "raise" or a finite number, not {value!r}') from None
    if not math.isfinite(number):
        # NaN would flow into the advantages (verl) or the total reward (verifiers) of a whole group
        raise ValueError(f"{what} must be finite, not {value!r}: a NaN reward poisons the group's advantages")
    return number


@dataclass(frozen=True)
class Settings:
    """An adapter's settings: ``grader`` (its key), ``version`` (pinned, or the latest),
    ``on_abstain`` and ``on_error`` ("raise" or a reward), ``on_unavailable`` (a judge's or an
    endpoint's silence: "error" or "abstain")."""

    grader: str
    on_abstain: Mapping_
    on_error: Mapping_
    version: int | None = None
    on_unavailable: OnUnavailable | None = None
    extra: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.grader, str) or not self.grader:
            raise GradeboxError("no grader: set GRADEBOX_GRADER to the grader's key (or pass grader=)")
        object.__setattr__(self, "on_abstain", _number_or_raise(self.on_abstain, "on_abstain (GRADEBOX_ON_ABSTAIN)"))
        object.__setattr__(self, "on_error", _number_or_raise(self.on_error, "on_error (GRADEBOX_ON_ERROR)"))
        if self.on_unavailable not in (None, "error", "abstain"):
            raise ValueError(f'on_unavailable (GRADEBOX_ON_UNAVAILABLE) is "error" or "abstain", not {self.on_unavailable!r}')

    @classmethod
    def from_env(cls, defaults: Mapping[str, Any], overrides: Mapping[str, Any], extra: tuple[str, ...] = ()) -> Settings:
        """Settings from ``overrides`` (keyword arguments a trainer's config passes), else the
        environment (GRADEBOX_GRADER, GRADEBOX_VERSION, GRADEBOX_ON_ABSTAIN, GRADEBOX_ON_ERROR,
        GRADEBOX_ON_UNAVAILABLE and the adapter's ``extra`` names), else ``defaults``."""

        def pick(name: str, env: str) -> Any:
            if overrides.get(name) is not None:
                return overrides[name]
            value = os.environ.get(env)
            return value if value not in (None, "") else defaults.get(name)

        version = pick("version", "GRADEBOX_VERSION")
        if version is not None:
            try:
                version = int(version)
            except (TypeError, ValueError):
                raise ValueError(f"version (GRADEBOX_VERSION) is a whole number, not {version!r}") from None
        return cls(
            grader=pick("grader", "GRADEBOX_GRADER"),
            on_abstain=pick("on_abstain", "GRADEBOX_ON_ABSTAIN"),
            on_error=pick("on_error", "GRADEBOX_ON_ERROR"),
            version=version,
            on_unavailable=pick("on_unavailable", "GRADEBOX_ON_UNAVAILABLE"),
            extra={name: v for name in extra if (v := pick(name.lower(), f"GRADEBOX_{name}")) is not None},
        )


def outcome_value(settings: Settings, result: Result, request_id: str | None) -> float:
    """The reward a result becomes: its score; for an abstention or a failure, what
    ``on_abstain`` / ``on_error`` say (a reward, or the error raised)."""
    score = result.score
    if score is not None:
        return score
    abstained, error = result.abstained, result.error
    if abstained is not None:
        if settings.on_abstain == "raise":
            body = {"code": "ABSTAINED", "abstained": {"code": abstained.code, "reason": abstained.reason}}
            message = f"grader {settings.grader!r} abstained: {abstained.code}: {abstained.reason}"
            raise GraderAbstainedError(422, "ABSTAINED", request_id, message, body)
        return float(settings.on_abstain)
    code, message = (error.code, error.message) if error is not None else ("INVALID_RESPONSE", "a result with no score")
    if settings.on_error == "raise":
        detail = f"grader {settings.grader!r} failed: {code}: {message}; set GRADEBOX_ON_ERROR=<a reward> to go on without raising"
        raise GraderRuntimeError(GRADE_ERROR_STATUS.get(code, 422), code, request_id, detail, {"code": code, "detail": message})
    return float(settings.on_error)
