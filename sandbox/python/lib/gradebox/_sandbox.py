"""The runtime's interface to a Python grader inside the sandbox: check, load, grade.

    check(source) -> str            JSON {"ok": true, "warnings": [...]} or
                                    {"ok": false, "failure": {"check", "message", "line"?, "column"?}}
    load(source) -> str             "" when grade is ready, else JSON {"message", "line"?, "column"?}
    shape() -> str                  which of grade and grade_group the loaded module defines:
                                    "thread", "group" or "both"
    grade(turns_json, metadata_json) -> float | str
                                    a float (a plain score), or JSON: a result {"score", "reason"?,
                                    "metadata"?, "subscores"?}, {"error": {"code", "message",
                                    "line"?, "column"?}} or {"abstained": {"reason"}} (grade returned
                                    None or raised Abstain)
    grade_group(turns_list_json, metadata_list_json) -> str
                                    JSON: an array with one value per thread (a number, a result,
                                    an error or an abstention, as grade's), or one error or
                                    abstention for the whole group
    load_batch(head, text, wide) -> None
                                    holds a packed batch (sandbox/protocol/batch.ts) for grade_slice
    grade_slice(start, end, emit) -> None
                                    grades the held batch's threads start..end-1 in order, calling
                                    emit(result) after each (a result as grade returns it); stops
                                    when emit returns False. One crossing per item instead of a
                                    call, two JSON texts and a parse each way

Positions are 1-based, in the user's source (compiled as "grader.py"). grade drives the
coroutine itself, without an event loop: it sends None until the coroutine returns. A coroutine
that yields anything but None (an asyncio future or task) is waiting for an event loop that does
not exist, so it can never complete: that is a GRADER_ERROR. KeyboardInterrupt is never caught:
it is how the runtime may interrupt a grader past its time limit.
"""

from __future__ import annotations

import json
import sys
import types
from typing import Any, Callable, Optional, Union

from ._result import MAX_POSITION, a_type, abstain_reason, abstained_json, convert, describe_exception, error_json
from .graders import Abstain
from .thread import ROLES, StringThread

FILENAME = "grader.py"
MODULE_NAME = "grader"

_loads = json.loads
_dumps = json.dumps
_adopt = StringThread._adopt
_coroutine = types.CoroutineType

# the loaded grader: its grade and grade_group functions and its source's lines (for columns)
_grade: Optional[Callable[[StringThread], Any]] = None
_grade_group: Optional[Callable[[list[StringThread]], Any]] = None
_lines: list[str] = []
# the last source that passed check(), and its code: load() of the same source skips a compile
_checked: tuple[str, Any] = ("", None)

NO_LOOP = (
    "graders run without an event loop (no timers, tasks or network): await coroutines and asyncio.sleep(0) only, "
    "one after another (gradebox.graders.combine and gradebox.gather do this for you)"
)


# ---------------------------------------------------------------------------------------------
# check


def check(source: str) -> str:
    """Checks 1-3 (syntax, structure, signature) without running the source."""
    global _checked
    from . import _checks  # the ast module is loaded only where validations run

    failure, warnings, code = _checks.check(source)
    if failure is not None:
        return _dumps({"ok": False, "failure": failure})
    _checked = (source, code)
    return _dumps({"ok": True, "warnings": warnings})


# ---------------------------------------------------------------------------------------------
# positions


def _column(line: int, byte_col: Optional[int]) -> int:
    if byte_col is None:
        return 0
    if 0 < line <= len(_lines):
        text = _lines[line - 1]
        if not text.isascii():
            return len(text.encode("utf-8")[:byte_col].decode("utf-8", "replace")) + 1
    return byte_col + 1


def _position(error: BaseException) -> tuple[int, int]:
    """(line, column) of the innermost frame in the grader's source; (0, 0) when none."""
    if isinstance(error, SyntaxError) and error.filename == FILENAME and error.lineno:
        return error.lineno, error.offset or 0
    found = None
    tb = error.__traceback__
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == FILENAME:
            found = tb
        tb = tb.tb_next
    if found is None:
        return 0, 0
    line = found.tb_lineno or 0
    column = 0
    try:
        positions = found.tb_frame.f_code.co_positions()
        index = found.tb_lasti // 2
        for i, position in enumerate(positions):
            if i == index:
                if position[0] == line and position[2] is not None:
                    column = _column(line, position[2])
                break
    except (AttributeError, ValueError):
        pass
    if not 0 < line <= MAX_POSITION:
        return 0, 0
    return line, column


def _thrown(error: BaseException) -> str:
    line, column = _position(error)
    if isinstance(error, MemoryError):
        return error_json("GRADER_MEMORY_LIMIT", "the grader ran out of memory (MemoryError)", line, column)
    message = describe_exception(error)
    # asyncio's words for "no loop" vary by version: "no running event loop", "There is no
    # current event loop in thread ..."
    if type(error) is RuntimeError and "event loop" in message:
        message = f"{message}: {NO_LOOP}"
    return error_json("GRADER_ERROR", message, line, column)


# ---------------------------------------------------------------------------------------------
# load


def load(source: str) -> str:
    """Runs the module body in a fresh module; "" when `grade` or `grade_group` (or both) is
    ready, else why not (JSON)."""
    global _grade, _grade_group, _lines, _checked
    _grade = None
    _grade_group = None
    _lines = source.splitlines()
    cached_source, code = _checked
    _checked = ("", None)
    if code is None or cached_source != source:
        try:
            code = compile(source, FILENAME, "exec", dont_inherit=True)
        except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
            from . import _checks

            failure = _checks.syntax(source)
            if isinstance(failure, dict):
                message = failure["message"]
                if not message.startswith(("IndentationError:", "TabError:")):
                    message = f"SyntaxError: {message}"
                return _load_failure(message, failure.get("line", 0), failure.get("column", 0))
            return _load_failure(describe_exception(error))
    module = types.ModuleType(MODULE_NAME)
    module.__file__ = FILENAME
    # StringThread is there without an import, as in the TypeScript sandbox: Adaptive's examples
    # annotate with it without importing it
    module.StringThread = StringThread  # type: ignore[attr-defined]
    sys.modules[MODULE_NAME] = module
    try:
        exec(code, module.__dict__)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        line, column = _position(error)
        return _load_failure(describe_exception(error), line, column)
    candidate = module.__dict__.get("grade")
    group = module.__dict__.get("grade_group")
    if (candidate is None and not callable(group)) or (candidate is not None and not callable(candidate)):
        what = "missing" if candidate is None else a_type(candidate)
        return _load_failure(f"TypeError: grade is not callable after the module ran (it is {what})")
    if group is not None and not callable(group):
        return _load_failure(f"TypeError: grade_group is not callable after the module ran (it is {a_type(group)})")
    _grade = candidate
    _grade_group = group
    return ""


def shape() -> str:
    """Which entry points the loaded module defines: "thread", "group" or "both"."""
    if _grade is not None and _grade_group is not None:
        return "both"
    return "group" if _grade_group is not None else "thread"


def _load_failure(message: str, line: int = 0, column: int = 0) -> str:
    out: dict[str, Any] = {"message": message}
    if 0 < line <= MAX_POSITION:
        out["line"] = line
        if 0 < column <= MAX_POSITION:
            out["column"] = column
    return _dumps(out)


# ---------------------------------------------------------------------------------------------
# grade


class _Pending(Exception):
    """The coroutine yielded to an event loop: it can never complete here."""


def _drive(coro: Any) -> Any:
    send = coro.send
    try:
        while True:
            waiting = send(None)
            if waiting is not None:
                break
    except StopIteration as stop:
        return stop.value
    try:
        coro.close()
    except KeyboardInterrupt:
        raise
    except BaseException:
        pass
    raise _Pending(a_type(waiting))


def grade(turns_json: str, metadata_json: str) -> Union[float, str]:
    """Grades one thread with the loaded grader: a float, or JSON (a result or an error)."""
    return _grade_thread(_loads(turns_json), {} if metadata_json == "{}" else _loads(metadata_json))


# the held batch: its text, its head's numbers and metadata, and where each thread starts in both
_batch_text = ""
_batch_nums: list[int] = []
_batch_metadata: list[Any] = []
_batch_starts: list[tuple[int, int]] = []
_batch_roles: tuple = ROLES


def load_batch(head: str, text: Any, wide: bool) -> None:
    """Holds a packed batch: head is JSON [[turn count, then role index and content length per
    turn, for each thread], [metadata or null per thread], then optionally the group sizes (or
    null) and the batch's roles outside ROLES (role index len(ROLES) + k names the k-th of
    them: sandbox/protocol/batch.ts); text is every turn's content in
    order, as a buffer (bytes, or a JavaScript typed array) of Latin-1 bytes or, when `wide`,
    UTF-16-LE units without surrogates: either way its lengths are code points here."""
    global _batch_text, _batch_nums, _batch_metadata, _batch_starts, _batch_roles
    _batch_text, _batch_nums, _batch_metadata, _batch_starts, _batch_roles = "", [], [], [], ROLES
    raw = text if isinstance(text, (bytes, bytearray)) else text.to_bytes()
    text = raw.decode("utf-16-le" if wide else "latin-1")
    parsed = _loads(head)
    nums, metadata = parsed[0], parsed[1]
    roles = ROLES + tuple(parsed[3]) if len(parsed) > 3 else ROLES
    starts = []
    n = pos = 0
    for _ in range(len(metadata)):
        starts.append((n, pos))
        count = nums[n]
        n += 1
        for _ in range(count):
            pos += nums[n + 1]
            n += 2
    _batch_text, _batch_nums, _batch_metadata, _batch_starts, _batch_roles = text, nums, metadata, starts, roles


def grade_slice(start: int, end: int, emit: Callable[[Union[float, str]], bool]) -> None:
    """Grades the held batch's threads start..end-1, emitting each one's result as it is made."""
    text, nums, metadata, starts = _batch_text, _batch_nums, _batch_metadata, _batch_starts
    roles = _batch_roles
    for t in range(start, min(end, len(starts))):
        n, pos = starts[t]
        count = nums[n]
        n += 1
        turns = []
        for _ in range(count):
            stop = pos + nums[n + 1]
            turns.append([roles[nums[n]], text[pos:stop]])
            pos = stop
            n += 2
        meta = metadata[t]
        if not emit(_grade_thread(turns, {} if meta is None else meta)):
            return


def _grade_thread(turns: list, metadata: dict) -> Union[float, str]:
    fn = _grade
    if fn is None:
        return error_json("GRADER_ERROR", "no grader is loaded (load(source) did not succeed)")
    thread = _adopt(turns, metadata)
    try:
        result = fn(thread)
        if type(result) is _coroutine:
            result = _drive(result)
    except _Pending as pending:
        return error_json("GRADER_ERROR", f"grade awaited {pending} that can never complete: {NO_LOOP}")
    except KeyboardInterrupt:
        raise
    except Abstain as abstain:
        return abstained_json(abstain_reason(abstain))
    except BaseException as error:
        return _thrown(error)
    if type(result) is float and result - result == 0.0:
        return result
    return convert(result)


def grade_group(turns_list_json: str, metadata_list_json: str) -> str:
    """Grades one group with the loaded grade_group: JSON, an array of one value per thread, or
    one error or abstention for the whole group (it raised, or did not return one result per
    thread)."""
    fn = _grade_group
    if fn is None:
        return error_json("GRADER_ERROR", "no grade_group is loaded (load(source) did not succeed)")
    metadata = _loads(metadata_list_json)
    threads = [_adopt(turns, {} if meta is None else meta) for turns, meta in zip(_loads(turns_list_json), metadata)]
    n = len(threads)
    try:
        result = fn(threads)
        if type(result) is _coroutine:
            result = _drive(result)
    except _Pending as pending:
        return error_json("GRADER_ERROR", f"grade_group awaited {pending} that can never complete: {NO_LOOP}")
    except KeyboardInterrupt:
        raise
    except Abstain as abstain:
        return abstained_json(abstain_reason(abstain))
    except BaseException as error:
        return _thrown(error)
    if not isinstance(result, (list, tuple)):
        return error_json(
            "INVALID_SCORE", f"grade_group must return a list of {n} results (one per thread, in order), got {a_type(result)}"
        )
    try:
        items = list(result)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        return _thrown(error)
    if len(items) != n:
        return error_json(
            "INVALID_SCORE",
            f"grade_group returned {len(items)} results for a group of {n} threads: it must return exactly one per thread, in order",
        )
    parts = []
    for item in items:
        if item is None:
            value: Any = abstained_json("grade_group returned None for this thread")
        elif type(item) is float and item - item == 0.0:
            value = item
        else:
            value = convert(item)
        parts.append(_dumps(value) if type(value) is float else value)
    return "[" + ",".join(parts) + "]"
