"""The Python blocks of docs/trainers/*.md that name this file in their doctest marker, run as
written against the real server (with an "exact-match" grader, as the pages say), then called
as each trainer calls what they build."""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from conftest import EXACT

import gradebox

PAGES = Path(__file__).resolve().parents[3] / "docs" / "trainers"
BLOCK = re.compile(r"<!-- doctest: skip: run by clients/python/tests/test_docs_trainers\.py[^>]*-->\n```python\n(.*?)```", re.S)


def _blocks(page: str) -> list[str]:
    return BLOCK.findall((PAGES / page).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def exact_match(client: gradebox.Gradebox) -> Iterator[str]:
    try:
        client.graders.get("exact-match")
    except gradebox.NotFoundError:
        client.graders.create_function("exact-match", source=EXACT)
    yield "exact-match"
    client.graders.delete("exact-match")


def _run(page: str) -> dict[str, Any]:
    blocks = _blocks(page)
    assert len(blocks) == 1, f"docs/trainers/{page}: {len(blocks)} blocks marked for this test"
    namespace: dict[str, Any] = {"__name__": f"docs_{page}"}
    exec(compile(blocks[0], f"docs/trainers/{page}", "exec"), namespace)
    return namespace


def test_the_trainer_pages_python_blocks_run_as_written(exact_match: str) -> None:
    trl = _run("trl.md")
    fn = trl["exact_match"]
    assert isinstance(fn, gradebox.AsyncRewardFunction) and fn.__name__ == "exact-match"
    logged: dict[str, float] = {}
    rewards = asyncio.run(
        fn(prompts=["What is 2+2?"] * 2, completions=["4", "5"], completion_ids=[[1], [2]], expected=["4", "4"], log_metric=logged.__setitem__)
    )
    assert rewards == [1.0, 0.0] and logged["exact-match/version"] == 1.0

    verl = _run("verl.md")
    assert verl["reward"] == {"score": 1.0, "abstained": 0.0, "failed": 0.0, "grader_version": 1.0, "reason": ""}

    verifiers = _run("verifiers.md")

    class Trace:
        messages = [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}]
        info: dict[str, Any] = {}

    assert asyncio.run(verifiers["reward"](task={"expected": "4"}, trace=Trace())) == 1.0
