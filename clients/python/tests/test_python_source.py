"""client.graders.create.function(fn=…): a Python function's source as a grader (renamed to
``grade``, decorators dropped, the imports it uses above it), what is refused (a lambda, a nested
function, a method, one without source), and what each way of registering sends. Sent to the
scripted stand-in: whether the server's runtime accepts it is test/python-graders.test.ts's."""

from __future__ import annotations

import ast
import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
from conftest import EXACT, Stub

import gradebox
from gradebox import Gradebox, function_source, language_of_file

MODULE = '''from __future__ import annotations

import json
import math as m
import os, re
from collections import Counter
from functools import wraps


def noisy(fn):
    @wraps(fn)
    async def inner(thread):
        return await fn(thread)
    return inner


@noisy
async def my_grader(thread) -> float:
    """1 when the completion is metadata.expected."""
    completion = (thread.completion() or "").strip()
    words = Counter(re.findall(r"\\w+", completion))
    if not words:
        return 0.0
    return 1.0 if completion == json.dumps(thread.metadata.get("expected", ""))[1:-1] else m.floor(0.5)


async def countdown(thread, n=2):
    return 0.0 if n == 0 else await countdown(thread, n - 1)


def outer():
    async def nested(thread):
        return 1.0
    return nested


class Holder:
    async def method(self, thread):
        return 1.0
'''


def load(tmp_path: Path, name: str, text: str) -> ModuleType:
    file = tmp_path / f"{name}.py"
    file.write_text(text, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, file)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture
def graders_module(tmp_path: Path) -> ModuleType:
    return load(tmp_path, "graders_under_test", MODULE)


def test_the_function_renamed_to_grade_with_the_imports_it_uses(graders_module: ModuleType) -> None:
    source = function_source(graders_module.my_grader.__wrapped__)
    tree = ast.parse(source)
    imports = [ast.unparse(s) for s in tree.body if isinstance(s, (ast.Import, ast.ImportFrom))]
    # __future__ first; os, wraps and the decorator's names are not used by the body
    assert imports == [
        "from __future__ import annotations",
        "import json",
        "import math as m",
        "import re",
        "from collections import Counter",
    ]
    defs = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
    assert [(type(d).__name__, d.name, d.decorator_list) for d in defs] == [("AsyncFunctionDef", "grade", [])]
    assert "@noisy" not in source and '"""1 when the completion is metadata.expected."""' in source
    assert source.endswith("return 1.0 if completion == json.dumps(thread.metadata.get(\"expected\", \"\"))[1:-1] else m.floor(0.5)\n")


def test_a_function_calling_itself_keeps_its_old_name(graders_module: ModuleType) -> None:
    source = function_source(graders_module.countdown)
    assert source.startswith("from __future__ import annotations\n\n\nasync def grade(thread, n=2):\n")
    assert source.endswith("\n\ncountdown = grade\n")
    namespace: dict[str, object] = {}
    exec(compile(source, "<grader>", "exec"), namespace)
    assert namespace["grade"] is namespace["countdown"]


def test_an_import_from_another_cell_is_made_from_what_the_name_is_bound_to(tmp_path: Path) -> None:
    # a notebook: the cell with the function has no import; the names are bound by an earlier cell
    module = load(tmp_path, "cell_module", "async def scored(thread):\n    return float(bool(pattern.search(thread.completion()))) + sqrt(0.0) + d.get('x', 0)\n")
    import math
    import re as regex

    module.pattern = regex.compile("x")  # an object whose module does not expose it by that name: left out
    module.sqrt = math.sqrt
    module.regex = regex
    module.d = {}
    source = function_source(module.scored)
    assert source.startswith("from math import sqrt\n\n\nasync def grade(thread):\n"), source


def test_what_cannot_be_registered_is_refused_with_the_reason(graders_module: ModuleType) -> None:
    cases = [
        (lambda thread: 1.0, "it is a lambda"),
        (graders_module.outer(), "inside another function"),
        (graders_module.Holder.method, "inside a class"),
        (graders_module.my_grader, "inside another function"),  # the decorator's wrapper, a closure
        (len, "fn must be a function"),
    ]
    scope: dict[str, object] = {}
    exec("async def typed(thread):\n    return 1.0\n", scope)  # as at the interactive prompt: no file to read
    cases.append((scope["typed"], "its source cannot be read"))
    for fn, why in cases:
        with pytest.raises(gradebox.GradeboxError, match=why) as info:
            function_source(fn)
        assert "top-level" in str(info.value) or "fn must be" in str(info.value)


def test_language_of_file() -> None:
    assert [language_of_file(p) for p in ("a.py", "B.PY", "c.ts", "d.mjs", "e.txt", "py")] == [
        "python",
        "python",
        "typescript",
        "typescript",
        None,
        None,
    ]


def test_create_function_sends_the_source_and_its_language(stub: Stub, graders_module: ModuleType, tmp_path: Path) -> None:
    py = tmp_path / "grade.py"
    py.write_text("async def grade(thread):\n    return 1.0\n", encoding="utf-8")
    ts = tmp_path / "grade.ts"
    ts.write_text(EXACT, encoding="utf-8")
    with Gradebox(stub.url, "p", "k", max_retries=0) as client:
        client.graders.create.function(key="a", fn=graders_module.countdown, description="d")
        client.graders.create.function("b", file=py)
        client.graders.create.function("c", source="async def grade(thread):\n    return 1.0\n", language="python")
        client.graders.create_function("d", source=EXACT)  # the first name: unchanged, typescript by the server's default
        client.graders.create_function("e", path=ts)
        with pytest.raises(gradebox.GradeboxError, match="exactly one"):
            client.graders.create.function("f", graders_module.countdown, source=EXACT)
        with pytest.raises(gradebox.GradeboxError, match="fn is a Python function"):
            client.graders.create.function("g", fn=graders_module.countdown, language="typescript")
        with pytest.raises(gradebox.GradeboxError, match="language must be one of typescript, python"):
            client.graders.create.function("h", source=EXACT, language="ruby")
    bodies = [json.loads(seen.body) for seen in stub.seen]
    assert [(b["key"], b.get("language")) for b in bodies] == [
        ("a", "python"),
        ("b", "python"),
        ("c", "python"),
        ("d", None),
        ("e", "typescript"),
    ]
    assert bodies[0]["source"] == function_source(graders_module.countdown)
    assert bodies[0]["description"] == "d"
    assert all(seen.method == "POST" and seen.path == "/v1/projects/p/graders" for seen in stub.seen)
