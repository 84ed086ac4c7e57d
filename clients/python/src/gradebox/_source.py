"""A Python function as grader source: what ``client.graders.create.function(fn=grade)`` sends.

The source is the function's own, read from its file or notebook cell (``inspect.getsource``),
with the def renamed to ``grade`` and its decorators dropped (they ran here; the sandbox would not
know their names). The module-level imports its body names are put above it: the lines of its
file that bind those names, or, when the import is in another notebook cell, an import made from
what the name is bound to here (a module, or an object its module exposes under that name).
Nothing else of the module goes along: a helper function or constant the grader uses must be
defined inside it. Only top-level functions: a lambda, a method, a nested function (a closure)
or one typed at the interactive prompt (no source to read) is refused with the reason."""

from __future__ import annotations

import ast
import inspect
import linecache
import re
import sys
import textwrap
import types
from typing import Any

from .errors import GradeboxError

__all__ = ["SourceMap", "function_source", "language_of_file", "mapped_function_source"]

_SUFFIXES = {".py": "python", ".ts": "typescript", ".mts": "typescript", ".cts": "typescript", ".tsx": "typescript"}
_SUFFIXES.update({".js": "typescript", ".mjs": "typescript", ".cjs": "typescript", ".jsx": "typescript"})


def language_of_file(path: str) -> str | None:
    """The language a grader file's name says it holds (``.py``: python; ``.ts``/``.js``:
    typescript), or None for any other name (the server's default then applies)."""
    lower = str(path).lower()
    for suffix, language in _SUFFIXES.items():
        if lower.endswith(suffix):
            return language
    return None


def _refuse(fn: Any, why: str) -> GradeboxError:
    name = getattr(fn, "__qualname__", repr(fn))
    return GradeboxError(
        f"cannot register {name} from its source: {why}. A function grader is a top-level `async def` in a file or "
        "notebook cell; or pass source= (with language=\"python\") or file="
    )


def _names_used(node: ast.AST) -> set[str]:
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}


def _bound(alias: ast.alias, from_import: bool) -> str:
    return alias.asname or (alias.name if from_import else alias.name.split(".")[0])


def _file_imports(fn: types.FunctionType, used: set[str]) -> tuple[list[tuple[str, int]], set[str]]:
    """The top-level imports of the function's file (or cell) that bind a name in ``used`` (each
    cut to those names, with the line of the file it came from), its ``__future__`` imports, and
    the names they bind."""
    filename = fn.__code__.co_filename
    text = "".join(linecache.getlines(filename, fn.__globals__))
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return [], set()  # e.g. a cell with IPython magics: the names are found through the globals instead
    lines: list[tuple[str, int]] = []
    bound: set[str] = set()
    for stmt in tree.body:
        if isinstance(stmt, ast.ImportFrom) and stmt.module == "__future__":
            lines.append((ast.unparse(stmt), stmt.lineno))
        elif isinstance(stmt, ast.Import):
            keep = [a for a in stmt.names if _bound(a, False) in used]
            if keep:
                lines.append((ast.unparse(ast.Import(names=keep)), stmt.lineno))
                bound.update(_bound(a, False) for a in keep)
        elif isinstance(stmt, ast.ImportFrom) and stmt.level == 0:  # a relative import means nothing in the sandbox
            keep = [a for a in stmt.names if a.name != "*" and _bound(a, True) in used]
            if keep:
                lines.append((ast.unparse(ast.ImportFrom(module=stmt.module, names=keep, level=0)), stmt.lineno))
                bound.update(_bound(a, True) for a in keep)
    return lines, bound


def _global_imports(fn: types.FunctionType, names: set[str]) -> list[str]:
    """Imports for names the function uses that are bound here to a module, or to an object its
    module exposes under that name (an import made in another notebook cell)."""
    lines = []
    for name in sorted(names):
        if name not in fn.__globals__:
            continue
        value = fn.__globals__[name]
        if isinstance(value, types.ModuleType):
            module = value.__name__
            lines.append(f"import {module}" if module == name else f"import {module} as {name}")
            continue
        module = getattr(value, "__module__", None)
        if not isinstance(module, str) or module in ("__main__", fn.__module__):
            continue  # the user's own helper: not registered with the grader
        origin = sys.modules.get(module)
        for attribute in (name, getattr(value, "__name__", None)):
            if attribute and getattr(origin, attribute, None) is value:
                lines.append(f"from {module} import {attribute}" + ("" if attribute == name else f" as {name}"))
                break
    return lines


class SourceMap:
    """Where each line of a source built by ``function_source`` came from in the function's file
    (or cell): the server's ``line``/``column`` count the sent source, the user reads their file."""

    def __init__(self, lines: list[int | None], def_line: int, name_end: int, column_shift: int) -> None:
        self._lines = lines
        self._def_line = def_line  # the sent source's def line (1-based), where the name was renamed
        self._name_end = name_end  # columns past this one on the def line come after `grade`
        self._column_shift = column_shift  # len(name) - len("grade")

    def position(self, line: int | None, column: int | None) -> tuple[int | None, int | None]:
        """The file's (line, column) for the sent source's; (None, None) for a line the file does
        not have (an import made from another cell, the blank lines, the ``name = grade`` alias)."""
        if line is None or not 1 <= line <= len(self._lines) or self._lines[line - 1] is None:
            return None, None
        if column is not None and line == self._def_line and column > self._name_end:
            column += self._column_shift
        return self._lines[line - 1], column


def function_source(fn: Any) -> str:
    """The source of a top-level Python function as a grader: its imports, then the function
    renamed to ``grade``. GradeboxError when it cannot be read or is not top-level."""
    return mapped_function_source(fn)[0]


def mapped_function_source(fn: Any) -> tuple[str, SourceMap]:
    """``function_source``, with where its lines are in the function's file."""
    if isinstance(fn, (staticmethod, classmethod)):
        fn = fn.__func__
    if not isinstance(fn, types.FunctionType):
        raise GradeboxError(f"fn must be a function defined with async def, not {type(fn).__name__}")
    if fn.__name__ == "<lambda>":
        raise _refuse(fn, "it is a lambda")
    if "<locals>" in fn.__qualname__ or fn.__closure__:
        raise _refuse(fn, "it is defined inside another function (top-level only)")
    if "." in fn.__qualname__:
        raise _refuse(fn, "it is defined inside a class (top-level only)")
    try:
        text = textwrap.dedent(inspect.getsource(fn))
    except (OSError, TypeError) as error:
        raise _refuse(fn, f"its source cannot be read ({error}; a function typed at the interactive prompt has none)") from None
    try:
        node = ast.parse(text).body[0]
    except (SyntaxError, IndexError):
        raise _refuse(fn, "its source as read does not parse on its own") from None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != fn.__name__:
        raise _refuse(fn, "its source as read is not its def")
    lines = text.splitlines(keepends=True)[node.lineno - 1 : node.end_lineno]
    # the def line, from its first column: `async def name(` or `def name(`; decorators are above it
    renamed = re.match(rf"^(\s*(?:async\s+)?def\s+){re.escape(node.name)}\b", lines[0])
    if renamed:
        lines[0] = renamed.group(1) + "grade" + lines[0][renamed.end() :]
    body = "".join(lines).rstrip() + "\n"
    used = _names_used(node) - {a.arg for a in ast.walk(node) if isinstance(a, ast.arg)}
    file_imports, bound = _file_imports(fn, used)
    imports: list[tuple[str, int | None]] = [*file_imports]
    imports += [(line, None) for line in _global_imports(fn, used - bound - {node.name})]
    # inspect.getsource starts at co_firstlineno (the first decorator's line, else the def's)
    first_body_line = fn.__code__.co_firstlineno + node.lineno - 1
    body_lines = body.count("\n")
    # a grader that calls itself by its old name still finds it
    if node.name != "grade" and node.name in used:
        body += f"\n\n{node.name} = grade\n"
    head = "\n".join(line for line, _ in imports) + "\n\n\n" if imports else ""
    where: list[int | None] = [line for _, line in imports] + ([None, None] if imports else [])
    def_line = len(where) + 1
    where += [first_body_line + i for i in range(body_lines)]
    where += [None] * (body.count("\n") - body_lines)
    name_end = len(renamed.group(1)) + len("grade") if renamed else 0
    return head + body, SourceMap(where, def_line, name_end, len(node.name) - len("grade"))
