"""Adaptive's graders page (its function graders' contract), pasted into a user's own script:
``from adaptive_harmony import StringThread`` resolves in an environment with only gradebox
installed (and not over a real adaptive_harmony), its five examples register and grade against the
real server, ``StringThread`` and ``gradebox.graders`` are the sandbox's, and a check's line points
into the user's file, not into the source the client sent."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import thread

import gradebox
from gradebox import Gradebox

# the page's five examples as a user pastes them into one script (exact.py): each `grade`
# registered right after its def; the keys are the test's (fresh ones), and the page's "Reading the
# thread" example, whose body ends in `...` (a grader returning None, refused by the test run),
# returns a score made of what it read
SCRIPT = '''import json
import os
import re

import gradebox
from adaptive_harmony import StringThread

adaptive = gradebox.Gradebox()
KEYS = json.loads(os.environ["EXAMPLE_KEYS"])


async def grade(thread: StringThread) -> float:
    completion = thread.completion() or ""
    expected = thread.metadata.get("expected", "")
    return 1.0 if completion.strip() == expected.strip() else 0.0

adaptive.graders.create.function(
    key=KEYS["exact"],
    fn=grade,
    description="Strict equality between completion and expected answer",
)


async def grade(thread: StringThread) -> float:
    completion = thread.completion()    # last assistant turn, or None
    turns = thread.get_turns()           # list of (role, content) tuples
    history = thread.messages()          # all turns except final assistant
    metadata = thread.metadata           # dataset row metadata dict
    return len(turns) + len(history) / 10 + len(metadata) / 100 + (0.001 if completion else 0.0)

adaptive.graders.create.function(key=KEYS["reading"], fn=grade, description="reading the thread")


# Regex match
import re

async def grade(thread: StringThread) -> float:
    completion = thread.completion() or ""
    pattern = thread.metadata.get("pattern", "")
    return 1.0 if re.search(pattern, completion) else 0.0

adaptive.graders.create.function(key=KEYS["regex"], fn=grade, description="regex")


# Strict JSON shape
import json

async def grade(thread: StringThread) -> float:
    completion = thread.completion() or ""
    try:
        parsed = json.loads(completion)
        return 1.0 if {"name", "email", "age"}.issubset(parsed.keys()) else 0.0
    except Exception:
        return 0.0

adaptive.graders.create.function(key=KEYS["json"], fn=grade, description="json shape")


# Multi-keyword scoring with partial credit
async def grade(thread: StringThread) -> float:
    completion = (thread.completion() or "").lower()
    keywords = thread.metadata.get("keywords", [])
    if not keywords:
        return 0.0
    hits = sum(1 for k in keywords if k.lower() in completion)
    return hits / len(keywords)

adaptive.graders.create.function(key=KEYS["keywords"], fn=grade, description="keywords")
print("registered")
'''


def run_python(code_or_file: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    """The installed package's interpreter, as a user runs it: their directory, no PYTHONPATH of ours."""
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    return subprocess.run([sys.executable, *code_or_file], cwd=cwd, env={**environ, **env}, capture_output=True, text=True, timeout=60)


def test_adaptive_graders_page_examples_run_as_pasted(client: Gradebox, new_key: Callable[[str], str], tmp_path: Path) -> None:
    keys = {name: new_key(f"adaptive-{name}") for name in ("exact", "reading", "regex", "json", "keywords")}
    (tmp_path / "exact.py").write_text(SCRIPT, encoding="utf-8")
    result = run_python(["exact.py"], tmp_path, EXAMPLE_KEYS=json.dumps(keys))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "registered"
    # what the server stored is the sandbox's import of StringThread, from adaptive_harmony
    assert client.graders.get(keys["exact"])["source"].startswith("from adaptive_harmony import StringThread\n")

    def score(key: str, completion: str, **metadata: object) -> float:
        return client.graders.grade(key, thread(completion, **metadata))["score"]

    assert (score(keys["exact"], " 4 ", expected="4"), score(keys["exact"], "5", expected="4")) == (1, 0)
    assert score(keys["reading"], "4", a=1, b=2) == pytest.approx(2 + 0.1 + 0.02 + 0.001)
    assert (score(keys["regex"], "order 66", pattern=r"\d+"), score(keys["regex"], "none", pattern=r"\d+")) == (1, 0)
    shaped = json.dumps({"name": "a", "email": "b", "age": 3})
    assert (score(keys["json"], shaped), score(keys["json"], '{"name": 1}'), score(keys["json"], "not json")) == (1, 0, 0)
    assert score(keys["keywords"], "Red and BLUE", keywords=["red", "blue", "green", "pink"]) == 0.5


def test_a_real_adaptive_harmony_is_not_shadowed(tmp_path: Path) -> None:
    check = "import adaptive_harmony, gradebox; print(getattr(adaptive_harmony, 'REAL', False), adaptive_harmony.StringThread is gradebox.StringThread)"
    # only gradebox installed: the shim answers, with gradebox's own class
    alone = run_python(["-c", check], tmp_path)
    assert alone.returncode == 0, alone.stderr
    assert alone.stdout.split() == ["False", "True"]
    # Adaptive's package anywhere on the path (here: earlier than site-packages) is the one imported
    real = tmp_path / "elsewhere" / "adaptive_harmony"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("REAL = True\nclass StringThread:\n    pass\n", encoding="utf-8")
    environ = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    shadowed = subprocess.run(
        [sys.executable, "-c", check], cwd=tmp_path, env={**environ, "PYTHONPATH": str(real.parent)}, capture_output=True, text=True, timeout=60
    )
    assert shadowed.returncode == 0, shadowed.stderr
    assert shadowed.stdout.split() == ["True", "False"]
    # the finder is last on sys.meta_path, installed at interpreter start by the package's .pth
    last = run_python(["-c", "import sys; print(getattr(sys.meta_path[-1], '__name__', ''), 'gradebox' in sys.modules)"], tmp_path)
    assert last.stdout.split() == ["AdaptiveHarmonyFinder", "False"]  # and gradebox itself is not loaded at start


def test_string_thread_and_graders_are_the_sandboxs() -> None:
    from gradebox.graders import combine, exact_match

    assert gradebox.StringThread.__module__ == "gradebox.thread"
    t = gradebox.StringThread([("user", "What is 2+2?"), ("assistant", "4")], metadata={"expected": "4"})
    assert (t.completion(), t.metadata) == ("4", {"expected": "4"})
    assert exact_match(t.completion(), " The 4! ") == 1.0
    assert callable(combine) and gradebox.graders.exact_match is exact_match


VALIDATED = '''import json
import socket


# a comment, so that the file's lines and the sent source's differ
async def my_grader(thread) -> float:
    data = json.dumps(thread.metadata)
    if thread.completion() == "4":
        raise ValueError("refused: " + data)
    return 1.0


async def opens_a_socket(thread) -> float:
    return float(socket.AF_INET)
'''


def test_a_check_failing_points_into_the_functions_file(client: Gradebox, new_key: Callable[[str], str], tmp_path: Path) -> None:
    from test_python_source import load

    module = load(tmp_path, "validated_grader", VALIDATED)
    sent, _ = gradebox._source.mapped_function_source(module.my_grader)
    assert sent.splitlines()[6] == '        raise ValueError("refused: " + data)'  # line 7 of what is sent
    # the test run's thread completes with "4": the raise, line 9 of the file
    with pytest.raises(gradebox.GraderValidationError) as raised:
        client.graders.create.function(key=new_key("lines"), fn=module.my_grader)
    assert raised.value.check == "test_run"
    assert (raised.value.source_line, raised.value.line) == (7, 9)
    # an import the sandbox refuses: the file's import line
    with pytest.raises(gradebox.GraderValidationError) as imported:
        client.graders.create.function(key=new_key("lines"), fn=module.opens_a_socket)
    assert (imported.value.source_line, imported.value.line) == (1, 2)
    # a column past the renamed name on the def line moves with the name's length
    _, source_map = gradebox._source.mapped_function_source(module.my_grader)
    assert source_map.position(4, 20) == (6, 24)  # "my_grader" is 4 longer than "grade"
    assert source_map.position(4, 3) == (6, 3)
    assert source_map.position(2, 1) == (None, None)  # a blank line the client wrote
