"""Checks 1-3 of a Python grader (syntax, structure, signature), from its source alone.

No grader code runs here: the source is compiled and its tree read. The rules follow the
TypeScript checks (sandbox/validate/analyze.ts) in Python terms: one top-level ``async def
grade``, or ``async def grade_group`` (a group's threads in, one result per thread out), or both
(a sync ``def`` is refused, as Adaptive's contract says), each with exactly one positional
parameter, warnings for a parameter of grade not annotated ``StringThread``, a return not
annotated ``float``, or an entry point without any ``return <value>`` (it would return None,
which abstains, on every thread), and imports refused when they cannot work in the sandbox. Positions are 1-based, the
column counted in characters of the line (the tree counts UTF-8 bytes).
"""

from __future__ import annotations

import ast
import sys
import warnings
from typing import Any, Optional, Union

FILENAME = "grader.py"

# Modules a grader may import besides the standard library, and the names each provides.
GRADEBOX_MODULES = ("gradebox", "gradebox.graders", "adaptive_harmony")
ALLOWED_TEXT = "the Python standard library (without processes, threads, sockets or network clients), gradebox and adaptive_harmony"

_WHY_PROCESS = "graders cannot start processes"
_WHY_THREAD = "graders run on one thread, without threads or processes"
_WHY_NETWORK = "graders run without network access (use an endpoint grader for that)"
_WHY_NATIVE = "graders cannot load native code"
_WHY_MISSING = "it is not part of the sandbox's Python"
_WHY_DYNAMIC = "graders import modules with import statements, not dynamically"

# Standard-library modules refused, and why. A dotted name refuses that module and its children.
REFUSED: dict[str, str] = {
    "subprocess": _WHY_PROCESS,
    "multiprocessing": _WHY_PROCESS,
    "concurrent": _WHY_THREAD,
    "threading": _WHY_THREAD,
    "pty": _WHY_PROCESS,
    "pipes": _WHY_PROCESS,
    "signal": _WHY_PROCESS,
    "socket": _WHY_NETWORK,
    "socketserver": _WHY_NETWORK,
    "ssl": _WHY_NETWORK,
    "select": _WHY_NETWORK,
    "selectors": _WHY_NETWORK,
    "http.client": _WHY_NETWORK,
    "http.server": _WHY_NETWORK,
    "http.cookiejar": _WHY_NETWORK,
    "urllib.request": _WHY_NETWORK,
    "urllib.robotparser": _WHY_NETWORK,
    "ftplib": _WHY_NETWORK,
    "smtplib": _WHY_NETWORK,
    "poplib": _WHY_NETWORK,
    "imaplib": _WHY_NETWORK,
    "nntplib": _WHY_NETWORK,
    "telnetlib": _WHY_NETWORK,
    "xmlrpc": _WHY_NETWORK,
    "webbrowser": _WHY_NETWORK,
    "wsgiref": _WHY_NETWORK,
    "ctypes": _WHY_NATIVE,
    "importlib": _WHY_DYNAMIC,
    "tkinter": _WHY_MISSING,
    "turtle": _WHY_MISSING,
    "turtledemo": _WHY_MISSING,
    "idlelib": _WHY_MISSING,
    "curses": _WHY_MISSING,
    "readline": _WHY_MISSING,
    "dbm": _WHY_MISSING,
    "venv": _WHY_MISSING,
    "ensurepip": _WHY_MISSING,
    "msvcrt": _WHY_MISSING,
    "winreg": _WHY_MISSING,
    "winsound": _WHY_MISSING,
}
# well-known packages that are not there, with what to do instead
_THIRD_PARTY_HINTS = {
    "requests": "use an endpoint grader to call a service",
    "httpx": "use an endpoint grader to call a service",
    "aiohttp": "use an endpoint grader to call a service",
    "openai": "use a judge grader to ask a model",
    "anthropic": "use a judge grader to ask a model",
    "numpy": "compute with math and statistics",
    "pydantic": "check shapes with isinstance and dicts",
}
_STDLIB = frozenset(sys.stdlib_module_names)

Failure = dict[str, Any]


class _Source:
    """The source's lines, to turn the tree's UTF-8 byte columns into character columns."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines = source.splitlines(keepends=True) if not source.isascii() else None

    def at(self, node: Union[ast.AST, Any]) -> dict[str, int]:
        line = getattr(node, "lineno", None)
        col = getattr(node, "col_offset", None)
        if not line:
            return {}
        return {"line": line, "column": self.column(line, col or 0)}

    def column(self, line: int, byte_col: int) -> int:
        if self.lines is None or line > len(self.lines):
            return byte_col + 1
        return len(self.lines[line - 1].encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1


def _failure(check: str, message: str, where: Optional[dict[str, int]] = None) -> Failure:
    out: Failure = {"check": check, "message": message}
    if where:
        out.update(where)
    return out


_TOO_DEEP = "the source is nested too deeply to compile; flatten it: move inner parts into named functions or variables"


def _syntax_failure(error: SyntaxError, column: Optional[int]) -> Failure:
    message = error.msg if type(error) is SyntaxError else f"{type(error).__name__}: {error.msg}"
    where = {"line": error.lineno, "column": column or 1} if error.lineno else None
    return _failure("syntax", message, where)


def syntax(source: str) -> Union[Failure, tuple[ast.Module, Any, list[str]]]:
    """Check 1: the tree, the code object and any compile warnings; or the failure."""
    if "\0" in source:
        before = source[: source.index("\0")]
        line = before.count("\n") + 1
        return _failure("syntax", "the source contains a NUL character", {"line": line, "column": len(before) - before.rfind("\n")})
    caught: list[str] = []
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        try:
            tree = compile(source, FILENAME, "exec", ast.PyCF_ONLY_AST, dont_inherit=True)
        except SyntaxError as error:
            # the parser's columns count characters
            return _syntax_failure(error, error.offset)
        except (RecursionError, MemoryError):
            return _failure("syntax", _TOO_DEEP)
        try:
            code = compile(tree, FILENAME, "exec", dont_inherit=True)
        except SyntaxError as error:
            # the compiler's (symbol table errors: 'return' outside function, ...) count UTF-8 bytes
            column = _Source(source).column(error.lineno, error.offset - 1) if error.lineno and error.offset else None
            return _syntax_failure(error, column)
        except (RecursionError, MemoryError):
            return _failure("syntax", _TOO_DEEP)
    for w in seen:
        if issubclass(w.category, (SyntaxWarning, DeprecationWarning)):
            caught.append(f"line {w.lineno}: {w.message} ({w.category.__name__})")
    return tree, code, caught


def _module_failure(src: _Source, node: ast.AST, name: str) -> Optional[Failure]:
    top = name.split(".")[0]
    if top in ("gradebox", "adaptive_harmony"):
        if name in GRADEBOX_MODULES:
            return None
        return _failure(
            "structure",
            f'import of "{name}" is not allowed: graders can import gradebox, gradebox.graders and adaptive_harmony from the sandbox\'s own modules',
            src.at(node),
        )
    why = None
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        why = REFUSED.get(".".join(parts[:i]))
        if why:
            break
    if why is None and top.startswith("_") and top != "__future__":
        why = "it is a private module of the interpreter"
    if why is None and top not in _STDLIB:
        hint = _THIRD_PARTY_HINTS.get(top)
        # neither stdlib nor a package we know: most often the user's own module next to the grader
        hint = hint or (
            "if it is your own module, a Python grader is one file: put the code it uses into the grader "
            "(only a TypeScript grader's local imports are bundled by the CLI)"
        )
        why = f"it is not in the standard library ({hint})"
    if why is None:
        return None
    return _failure("structure", f'import of "{name}" is not allowed: {why}. Graders can use {ALLOWED_TEXT}.', src.at(node))


def _exported(module: str) -> Optional[frozenset[str]]:
    if module == "adaptive_harmony":
        import adaptive_harmony as m
    elif module == "gradebox":
        import gradebox as m
    elif module == "gradebox.graders":
        from gradebox import graders as m
    else:
        return None
    return frozenset(getattr(m, "__all__", ()))


def imports(tree: ast.Module, src: _Source) -> Optional[Failure]:
    """Part of check 2: every import statement anywhere, and calls of __import__."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                failure = _module_failure(src, node, alias.name)
                if failure:
                    return failure
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                return _failure("structure", "relative imports are not allowed: a grader is one module", src.at(node))
            module = node.module or ""
            failure = _module_failure(src, node, module)
            if failure:
                return failure
            names = _exported(module)
            if names is not None:
                for alias in node.names:
                    if alias.name == "*" or alias.name in names:
                        continue
                    if module == "gradebox" and alias.name == "graders":
                        continue
                    return _failure(
                        "structure",
                        f'"{module}" has no "{alias.name}": it provides {", ".join(sorted(names))}',
                        src.at(node),
                    )
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "__import__":
            return _failure("structure", f"__import__() is not allowed: {_WHY_DYNAMIC}", src.at(node))
    return None


def _nested_grade(tree: ast.Module, name: str = "grade") -> Optional[ast.AST]:
    for statement in tree.body:
        for node in ast.walk(statement):
            if node is statement:
                continue
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.name == name:
                return node
    return None


def _binds_grade(statement: ast.stmt, name: str = "grade") -> bool:
    """A top-level statement that binds the name (grade) other than by a def."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    elif isinstance(statement, ast.ClassDef):
        return statement.name == name
    elif isinstance(statement, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in statement.names)
    for target in targets:
        for node in ast.walk(target):
            if isinstance(node, ast.Name) and node.id == name:
                return True
    return False


GROUP = "grade_group"


def _group_entry(tree: ast.Module, src: _Source) -> Union[Failure, ast.AsyncFunctionDef, None]:
    """The top-level `async def grade_group`, when there is one."""
    defs = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == GROUP]
    if len(defs) > 1:
        lines = ", ".join(str(d.lineno) for d in defs)
        return _failure(
            "structure",
            f"grade_group is defined {len(defs)} times at the top level (lines {lines}); keep one `async def grade_group(threads)`",
            src.at(defs[1]),
        )
    if not defs:
        other = next((s for s in tree.body if _binds_grade(s, GROUP)), None)
        if other is not None:
            return _failure(
                "structure", "grade_group must be an async function: define it with `async def grade_group(threads):`", src.at(other)
            )
        return None
    if not isinstance(defs[0], ast.AsyncFunctionDef):
        return _failure(
            "structure",
            "grade_group must be async: write `async def grade_group(threads):` (sync graders are rejected)",
            src.at(defs[0]),
        )
    return defs[0]


def structure(tree: ast.Module, src: _Source) -> Union[Failure, ast.AsyncFunctionDef, None]:
    """Check 2: at most one top-level `async def grade` (None: there is none, and grade_group,
    checked by the caller, must then be there)."""
    defs = [s for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == "grade"]
    if len(defs) > 1:
        lines = ", ".join(str(d.lineno) for d in defs)
        return _failure(
            "structure",
            f"grade is defined {len(defs)} times at the top level (lines {lines}); keep one `async def grade(thread)`",
            src.at(defs[1]),
        )
    if not defs:
        other = next((s for s in tree.body if _binds_grade(s)), None)
        if other is not None:
            return _failure("structure", "grade must be an async function: define it with `async def grade(thread):`", src.at(other))
        if any((isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef)) and s.name == GROUP) or _binds_grade(s, GROUP) for s in tree.body):
            return None
        nested = _nested_grade(tree)
        if nested is not None:
            return _failure(
                "structure",
                "grade is defined inside another statement (a function, class or block); it must be a top-level `async def grade(thread):`",
                src.at(nested),
            )
        names = [s.name for s in tree.body if isinstance(s, (ast.FunctionDef, ast.AsyncFunctionDef))]
        found = f" (found {', '.join(names)}: name the entry point grade)" if names else ""
        return _failure(
            "structure", f"no top-level `async def grade(thread):` (or `async def grade_group(threads):`) found{found}"
        )
    entry = defs[0]
    if not isinstance(entry, ast.AsyncFunctionDef):
        return _failure("structure", "grade must be async: write `async def grade(thread):` (sync graders are rejected)", src.at(entry))
    return entry


def _text(source: str, node: ast.AST) -> str:
    segment = ast.get_source_segment(source, node)
    return " ".join((segment if segment is not None else ast.dump(node)).split())


def _names(node: ast.expr) -> Optional[list[str]]:
    """The names a type annotation is made of (``a.b.C`` is C; X | Y and Union/Optional split),
    or None when it is something else."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        try:
            node = ast.parse(node.value, mode="eval").body
        except SyntaxError:
            return None
    if isinstance(node, ast.Name):
        return [node.id]
    if isinstance(node, ast.Attribute):
        return [node.attr]
    if isinstance(node, ast.Constant) and node.value is None:
        return ["None"]
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        left, right = _names(node.left), _names(node.right)
        return None if left is None or right is None else left + right
    if isinstance(node, ast.Subscript):
        base = _names(node.value)
        if base in (["Union"], ["Optional"]):
            parts = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
            out: list[str] = [] if base == ["Union"] else ["None"]
            for part in parts:
                names = _names(part)
                if names is None:
                    return None
                out += names
            return out
        if base in (["dict"], ["Dict"], ["Mapping"]):
            return ["dict"]
    return None


# None abstains
_SCORE_TYPES = frozenset(("float", "int", "dict", "Dict", "Mapping", "GradeScore", "EvaluationResult", "None"))


def _returns_value(entry: ast.AsyncFunctionDef) -> bool:
    """Whether the function's own body (not a nested function's) has a `return <value>`."""
    stack: list[ast.AST] = list(entry.body)
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Return) and node.value is not None:
            return True
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            continue
        stack.extend(ast.iter_child_nodes(node))
    return False


def _no_return_warning(entry: ast.AsyncFunctionDef) -> list[str]:
    if _returns_value(entry):
        return []
    what = "a list of results" if entry.name == GROUP else "a score"
    return [
        f"{entry.name} has no `return <value>`: it returns None, which abstains on every thread; return {what} "
        "(return None, or raise Abstain, only where no score is honest)"
    ]


def _one_parameter(entry: ast.AsyncFunctionDef, src: _Source) -> Optional[Failure]:
    args = entry.args
    positional = args.posonlyargs + args.args
    required_kw = [a.arg for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is None]
    problem = None
    if args.vararg is not None:
        problem = f"*{args.vararg.arg}"
    elif args.kwarg is not None:
        problem = f"**{args.kwarg.arg}"
    elif required_kw:
        problem = f"a required keyword-only parameter {required_kw[0]}"
    elif len(positional) != 1:
        problem = f"{len(positional)} parameters"
    if problem:
        what = "the group's threads, a list" if entry.name == GROUP else "the thread"
        return _failure("signature", f"{entry.name} must take exactly one parameter ({what}); it takes {problem}", src.at(entry))
    return None


def group_signature(entry: ast.AsyncFunctionDef, src: _Source) -> Union[Failure, list[str]]:
    """Check 3 for grade_group: exactly one positional parameter; a warning without any return."""
    failure = _one_parameter(entry, src)
    return failure if failure else _no_return_warning(entry)


def signature(entry: ast.AsyncFunctionDef, src: _Source) -> Union[Failure, list[str]]:
    """Check 3: exactly one positional parameter; warnings for the annotations and a missing return."""
    failure = _one_parameter(entry, src)
    if failure:
        return failure
    positional = entry.args.posonlyargs + entry.args.args
    found: list[str] = []
    annotation = positional[0].annotation
    if annotation is None:
        found.append("the parameter of grade is not annotated; annotate it as StringThread")
    elif _names(annotation) != ["StringThread"]:
        found.append(f"the parameter of grade is annotated {_text(src.source, annotation)}, not StringThread")
    returns = entry.returns
    if returns is None:
        found.append("the return type of grade is not annotated; annotate it as float")
    else:
        names = _names(returns)
        if names is None or not all(n in _SCORE_TYPES for n in names):
            found.append(f"the return type of grade is {_text(src.source, returns)}, not float")
    return found + _no_return_warning(entry)


def check(source: str) -> tuple[Optional[Failure], list[str], Any]:
    """(failure or None, warnings, code object when the checks passed)."""
    compiled = syntax(source)
    if isinstance(compiled, dict):
        return compiled, [], None
    tree, code, caught = compiled
    src = _Source(source)
    try:
        failure = imports(tree, src)
        if failure:
            return failure, [], None
        entry = structure(tree, src)
        if isinstance(entry, dict):
            return entry, [], None
        group = _group_entry(tree, src)
        if isinstance(group, dict):
            return group, [], None
        found: Union[Failure, list[str]] = [] if entry is None else signature(entry, src)
        if isinstance(found, dict):
            return found, [], None
        if group is not None:
            found_group = group_signature(group, src)
            if isinstance(found_group, dict):
                return found_group, [], None
            found = found + found_group
    except RecursionError:
        return _failure("structure", "the source is nested too deeply to analyse; flatten it: move inner parts into named functions"), [], None
    return None, found + caught, code
