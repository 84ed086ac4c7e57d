"""Stands in for HUD's results.py (pydantic models): the same fields and the same refusal of a
value outside [0, 1] (pydantic's Field(ge=0.0, le=1.0): NaN fails both bounds)."""

from __future__ import annotations

import copy
from typing import Any, Optional


class SubScore:
    def __init__(self, name: str, value: float, weight: float = 1.0, children: Optional[list] = None, info: Any = None) -> None:
        if not isinstance(value, (int, float)) or isinstance(value, bool):
            raise ValueError("value must be a number")
        if not (value >= 0.0 and value <= 1.0):
            raise ValueError(f"value must be between 0.0 and 1.0, got {value}")
        self.name = name
        self.value = float(value)
        self.weight = float(weight)
        self.children = children
        self.info = info

    def model_copy(self, update: dict) -> "SubScore":
        out = copy.copy(self)
        for k, v in update.items():
            setattr(out, k, v)
        return out


class EvaluationResult:
    def __init__(self, reward: float = 0.0, done: bool = True, subscores: Optional[list] = None) -> None:
        self.reward = reward
        self.done = done
        self.subscores = subscores
