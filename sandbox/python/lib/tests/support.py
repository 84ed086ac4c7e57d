"""Helpers of the tests: a grader's source checked, loaded and run as the runtime does it."""

from __future__ import annotations

import json
import textwrap
from typing import Any, Optional, Sequence, Union

from gradebox import _sandbox

MOCK_TURNS = [["user", "What is 2+2?"], ["assistant", "4"]]


def src(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def check(source: str) -> dict[str, Any]:
    out = _sandbox.check(source)
    assert isinstance(out, str)
    return json.loads(out)


def load(source: str) -> Optional[dict[str, Any]]:
    out = _sandbox.load(source)
    assert isinstance(out, str)
    return json.loads(out) if out else None


def grade(turns: Sequence[Sequence[str]] = MOCK_TURNS, metadata: Optional[dict[str, Any]] = None) -> Union[float, dict[str, Any]]:
    out = _sandbox.grade(json.dumps(turns), json.dumps(metadata or {}))
    if isinstance(out, float):
        return out
    assert isinstance(out, str), type(out)
    return json.loads(out)


def run(source: str, turns: Sequence[Sequence[str]] = MOCK_TURNS, metadata: Optional[dict[str, Any]] = None) -> Union[float, dict[str, Any]]:
    """check, load and grade: the source must pass the checks and load."""
    checked = check(source)
    assert checked["ok"], checked
    loaded = load(source)
    assert loaded is None, loaded
    return grade(turns, metadata)
