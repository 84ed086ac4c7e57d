"""What a grader returned, as the sandbox reports it: a float, or the JSON of a result or error.

The rules are the TypeScript prelude's (sandbox/isolate/prelude.ts, checkResult), in Python
terms. Converting runs no grader code where it can be helped: numbers and strings of subclasses
are read with the base type's own slot (``float.__float__``, ``int.__index__``, ``str.__str__``),
dicts and lists through ``dict.items``/``list.__iter__`` of the base type, SubScore fields through
the class's own slot descriptors, and JSON is written only from the exact-typed copy this module
builds. The host reads what comes out again as hostile (sandbox/worker/reply-reader.ts): these
rules exist for clear messages, not as the boundary.
"""

from __future__ import annotations

import json
from math import isfinite as _isfinite
from typing import Any

from .graders import Abstain, EvaluationResult, SubScore

# the bounds of sandbox/protocol/replies.ts
MAX_RESULT = 16 * 1024
MAX_MESSAGE = 2000
# the largest line or column an error carries (sandbox/isolate/reply.ts's MAX_POSITION)
MAX_POSITION = 999_999
# keys a result may not use anywhere (sandbox/worker/reply-reader.ts)
FORBIDDEN_KEYS = frozenset(("__proto__", "constructor", "prototype"))
# nesting of metadata and subscores; deeper is refused before JSON is written
MAX_DEPTH = 100

_float_of = float.__float__
_int_of = int.__index__
_str_of = str.__str__
_dict_items = dict.items
_dict_get = dict.get
_dict_contains = dict.__contains__
_list_iter = list.__iter__
_tuple_iter = tuple.__iter__
_MISSING: Any = object()
_type_name_of = type.__dict__["__name__"].__get__
_dumps = json.dumps
_SUB_FIELDS = {f: SubScore.__dict__[f].__get__ for f in ("name", "value", "weight", "children", "info")}
_EVAL_FIELDS = {f: EvaluationResult.__dict__[f].__get__ for f in ("reward", "content", "info", "isError", "subscores")}


_type_dict = type.__dict__["__dict__"].__get__
_type_mro = type.__dict__["__mro__"].__get__


def _defines(value: Any, name: str) -> bool:
    """Whether the value's class (or a base) defines the method, read without running its code."""
    return any(name in _type_dict(k) for k in _type_mro(type(value)))


def type_name(value: Any) -> str:
    """The type's name, read without running a metaclass's code."""
    try:
        return _type_name_of(type(value))
    except Exception:
        return "object"


def a_type(value: Any) -> str:
    """'a str', 'an int': the value's type with its article."""
    name = type_name(value)
    return f"{'an' if name[:1] in ('a', 'e', 'i', 'o', 'u', 'A', 'E', 'I', 'O', 'U') else 'a'} {name}"


def clip(message: str) -> str:
    return message if len(message) <= MAX_MESSAGE else message[:MAX_MESSAGE] + "…"


def error_json(code: str, message: str, line: int = 0, column: int = 0) -> str:
    err: dict[str, Any] = {"code": code, "message": clip(message)}
    if 0 < line <= MAX_POSITION:
        err["line"] = line
        if 0 < column <= MAX_POSITION:
            err["column"] = column
    # ASCII: a lone surrogate in a message travels escaped, as JSON.stringify would write it
    return _dumps({"error": err})


def abstained_json(reason: str) -> str:
    """An abstention (GRADER_ABSTAINED), with its reason bounded as a message is."""
    return _dumps({"abstained": {"reason": clip(reason)}})


def abstain_reason(value: Any) -> str:
    """The reason an Abstain carries (its ``reason``, when a str), read defensively: a subclass
    may make reading it fail."""
    try:
        reason = getattr(value, "reason", None)
    except KeyboardInterrupt:
        raise
    except BaseException:
        reason = None
    text = _str_of(reason) if isinstance(reason, str) else ""
    return text if text else "the grader abstained"


def is_abstain(value: Any) -> bool:
    return isinstance(value, Abstain)


class Invalid(Exception):
    """An INVALID_SCORE, with its message."""


def _describe(value: Any) -> str:
    if value is None:
        return "None"
    t = type(value)
    if issubclass(t, bool):
        return f"a bool ({value is True})"
    if issubclass(t, int):
        n = _int_of(value)
        return f"an int ({n})" if n.bit_length() <= 64 else "an int too large for a float"
    if issubclass(t, float):
        return repr(_float_of(value))
    return a_type(value)


def _score(value: Any, what: str, expected: str = "an int or float") -> float:
    """A finite float from an int or float (or a subclass, read as its base type); else Invalid."""
    t = type(value)
    if t is float:
        f = value
    elif t is int:
        try:
            f = float(value)
        except OverflowError:
            raise Invalid(f"{what} must be a finite number, got an int too large for a float") from None
    elif t is bool or issubclass(type(value), bool):
        raise Invalid(f"{what} is {_describe(value)}: booleans are not scores; return float(...) (1.0 or 0.0)")
    elif issubclass(type(value), float):
        f = _float_of(value)
    elif issubclass(type(value), int):
        try:
            f = float(_int_of(value))
        except OverflowError:
            raise Invalid(f"{what} must be a finite number, got an int too large for a float") from None
    else:
        hint = "; convert it with float(...)" if _defines(value, "__float__") else ""
        raise Invalid(f"{what} must be {expected}, got {_describe(value)}{hint}")
    if not _isfinite(f):
        raise Invalid(f"{what} must be a finite number, got {f!r}")
    return f


class _Copier:
    """Copies a JSON value into exact dicts, lists, strs, ints, floats, bools and None, counting
    a lower bound of its JSON size so that an oversized value is refused before it is written."""

    __slots__ = ("size",)

    def __init__(self) -> None:
        self.size = 0

    def _grow(self, n: int) -> None:
        self.size += n
        if self.size > MAX_RESULT:
            raise Invalid(f"the result is over {MAX_RESULT} characters of JSON, the limit")

    def copy(self, value: Any, path: str, depth: int) -> Any:
        if value is None or value is True or value is False:
            self._grow(4)
            return value
        t = type(value)
        if t is str:
            self._grow(len(value) + 2)
            return value
        if t is float or t is int:
            return self._number(value, path)
        if depth >= MAX_DEPTH:
            raise Invalid(f"{path} is nested more than {MAX_DEPTH} levels deep")
        if issubclass(type(value), dict):
            return self._dict(_dict_items(value), path, depth)
        if issubclass(type(value), list):
            return self._list(_list_iter(value), path, depth)
        if issubclass(type(value), tuple):
            return self._list(_tuple_iter(value), path, depth)
        if issubclass(type(value), str):
            s = _str_of(value)
            self._grow(len(s) + 2)
            return s
        if issubclass(type(value), bool):
            raise Invalid(f"{path} is a bool subclass")  # unreachable: bool cannot be subclassed
        if issubclass(type(value), (int, float)):
            return self._number(value, path)
        if issubclass(type(value), SubScore):
            return self._subscore(value, path, depth)
        raise Invalid(f"{path} is {_describe(value)}, which is not a JSON value (dict, list, str, int, float, bool or None)")

    def _number(self, value: Any, path: str) -> Any:
        t = type(value)
        if t is not int and t is not float:
            value = _int_of(value) if issubclass(type(value), int) else _float_of(value)
            t = type(value)
        if t is float:
            if not _isfinite(value):
                raise Invalid(f"{path} is {value!r}: JSON has no NaN or Infinity")
            self._grow(1)
        else:
            # a lower bound of its digits; Python refuses to print ints past 4300 digits
            self._grow(max(1, (value.bit_length() * 3) // 10))
        return value

    def _dict(self, items: Any, path: str, depth: int) -> dict[str, Any]:
        out: dict[str, Any] = {}
        self._grow(2)
        for key, item in items:
            if type(key) is not str:
                if not issubclass(type(key), str):
                    raise Invalid(f"{path} has a key that is {_describe(key)}; keys must be str")
                key = _str_of(key)
            if key in FORBIDDEN_KEYS:
                raise Invalid(f'the result carries a "{key}" key; results may not use __proto__, constructor or prototype as keys')
            self._grow(len(key) + 4)
            out[key] = self.copy(item, f"{path}[{key!r}]", depth + 1)
        return out

    def _list(self, items: Any, path: str, depth: int) -> list[Any]:
        out: list[Any] = []
        self._grow(2)
        for i, item in enumerate(items):
            self._grow(1)
            out.append(self.copy(item, f"{path}[{i}]", depth + 1))
        return out

    def _subscore(self, s: SubScore, path: str, depth: int) -> dict[str, Any]:
        get = _SUB_FIELDS
        out: dict[str, Any] = {
            "name": self.copy(get["name"](s), f"{path}.name", depth + 1),
            "value": self.copy(get["value"](s), f"{path}.value", depth + 1),
            "weight": self.copy(get["weight"](s), f"{path}.weight", depth + 1),
        }
        info = get["info"](s)
        if info is not None:
            out["metadata"] = self.copy(info, f"{path}.metadata", depth + 1)
        children = get["children"](s)
        if children is not None:
            out["children"] = self.copy(children, f"{path}.children", depth + 1)
        self._grow(40)
        return out


def _result(score: Any, reason: Any, metadata: Any, subscores: Any) -> str:
    out: dict[str, Any] = {"score": _score(score, "the result's score")}
    copier = _Copier()
    if reason is not None:
        if type(reason) is not str:
            if not issubclass(type(reason), str):
                raise Invalid(f"the result's reason must be a str, got {_describe(reason)}")
            reason = _str_of(reason)
        copier._grow(len(reason) + 10)
        out["reason"] = reason
    if metadata is not None:
        if not issubclass(type(metadata), dict):
            raise Invalid(f"the result's metadata must be a dict, got {_describe(metadata)}")
        out["metadata"] = copier.copy(metadata, "metadata", 1)
    if subscores is not None:
        if not issubclass(type(subscores), (list, tuple)):
            raise Invalid(f"the result's subscores must be a list, got {_describe(subscores)}")
        out["subscores"] = copier.copy(subscores, "subscores", 1)
    try:
        text = _dumps(out, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError as error:
        raise Invalid(f"the result is not JSON: {error}") from None
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            # a lone surrogate: escaped, as JSON.stringify writes one
            text = _dumps(out, allow_nan=False, separators=(",", ":"))
    # its length as JavaScript counts it (UTF-16 code units): the bound is the host's
    size = len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2
    if size > MAX_RESULT:
        raise Invalid(f"the result is {size} characters of JSON; the limit is {MAX_RESULT}")
    return text


def convert(value: Any) -> Any:
    """A float for a plain score, else a str of JSON: a result or an error."""
    t = type(value)
    if t is float:
        if _isfinite(value):
            return value
    if value is None:
        # TRL's convention: a reward of None is no reward for this sample
        return abstained_json("grade returned None")
    if is_abstain(value):
        return abstained_json(abstain_reason(value))
    try:
        if t is dict or issubclass(type(value), dict):
            score = _dict_get(value, "score", _MISSING) if _dict_contains(value, "score") else _dict_get(value, "reward", _MISSING)
            if score is _MISSING:
                raise Invalid("the result has no score: return {'score': float, 'reason'?: str, 'metadata'?: dict, 'subscores'?: list}")
            return _result(score, _dict_get(value, "reason"), _dict_get(value, "metadata"), _dict_get(value, "subscores"))
        if issubclass(type(value), EvaluationResult):
            get = _EVAL_FIELDS
            if get["isError"](value):
                content = get["content"](value)
                detail = _str_of(content) if issubclass(type(content), str) else "no content"
                return error_json("GRADER_ERROR", f"grade returned an EvaluationResult with isError=True: {detail}")
            return _result(get["reward"](value), get["content"](value), get["info"](value) or None, get["subscores"](value))
        if issubclass(type(value), SubScore):
            raise Invalid("grade returned a SubScore: return its .value, or `await combine(...)` of it")
        return _score(value, "grade's result", "an int, a float or a dict {'score', 'reason'?, 'metadata'?, 'subscores'?}")
    except Invalid as invalid:
        return error_json("INVALID_SCORE", str(invalid))
    except RecursionError:
        return error_json("INVALID_SCORE", "the result is nested too deeply to read")


def describe_exception(error: BaseException) -> str:
    """'ZeroDivisionError: division by zero', as Python's traceback ends; bounded."""
    name = type_name(error)
    try:
        text = str(error)
        if type(text) is not str:
            text = "(a message that is not a str)"
    except KeyboardInterrupt:
        raise
    except BaseException:
        text = "(its message could not be read)"
    return clip(f"{name}: {text}" if text else name)
