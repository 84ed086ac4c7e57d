"""gradebox.graders: the grader standard library, in Python.

The same helpers as the TypeScript module (sdk/graders.ts) under Python names, with the
semantics of HUD's Python graders (``hud.graders``): text comparisons built on Python's own
``str.lower``/``str.strip`` and ``re`` (``\\w``, ``\\s``, ``\\b``, ``\\d`` as Python reads them),
``SubScore`` values in [0, 1], ``combine`` as a coroutine that returns an ``EvaluationResult``,
duplicate names renamed ``name-1``, ``name-2`` ... and ``combine_any``/``combine_all`` taking the
weight first. Where HUD raises (a non-str ``expected`` without normalisation, say), these raise
too. ``score_rubric`` is autorubric's scoring, as the TypeScript ``scoreRubric``.

Not here: ``BashGrader`` and ``LLMJudgeGrader`` (a grader runs without processes or network;
use a judge grader or an endpoint grader). ``combine`` awaits its awaitables one after another:
there is no event loop in the sandbox, and the result is the same as HUD's ``asyncio.gather``.
"""

from __future__ import annotations

import json
import math
import re
import warnings
from collections import Counter
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from typing import Any, Literal, Optional, Tuple, Union

# ---------------------------------------------------------------------------------------------
# Text helpers

_ARTICLES_RE = re.compile(r"\b(a|an|the)\b", re.IGNORECASE)
_WHITESPACE_RE = re.compile(r"\s+")
_PUNCTUATION_RE = re.compile(r"[^\w\s]")
_NUMBER_RE = re.compile(r"-?\d+\.?\d*")


def normalize(text: Any) -> str:
    """Lower-case; anything but word characters and whitespace becomes a space; the words
    a/an/the removed; whitespace collapsed; stripped. ``normalize("  The Answer is: 42! ")`` is
    ``"answer is 42"``."""
    s = text if isinstance(text, str) else str(text)
    s = s.lower()
    s = _PUNCTUATION_RE.sub(" ", s)
    s = _ARTICLES_RE.sub(" ", s)
    s = _WHITESPACE_RE.sub(" ", s)
    return s.strip()


def exact_match(answer: Any, expected: str, *, normalize_text: bool = True) -> float:
    """1.0 when equal after ``normalize`` (or, with normalize_text=False, after strip + lower)."""
    if normalize_text:
        return 1.0 if normalize(answer) == normalize(expected) else 0.0
    a = (answer if isinstance(answer, str) else str(answer)).strip().lower()
    return 1.0 if a == expected.strip().lower() else 0.0


def contains(answer: Any, substring: str, *, case_sensitive: bool = False) -> float:
    """1.0 when answer contains substring."""
    a = answer if isinstance(answer, str) else str(answer)
    s = substring
    if not case_sensitive:
        a = a.lower()
        s = s.lower()
    return 1.0 if s in a else 0.0


def contains_any(answer: Any, substrings: Iterable[str], *, case_sensitive: bool = False) -> float:
    """1.0 when answer contains at least one of the substrings; an empty list is 0.0."""
    a = answer if isinstance(answer, str) else str(answer)
    if not case_sensitive:
        a = a.lower()
        substrings = [s.lower() for s in substrings]
    return 1.0 if any(s in a for s in substrings) else 0.0


def contains_all(answer: Any, substrings: Iterable[str], *, case_sensitive: bool = False) -> float:
    """1.0 when answer contains every substring; an empty list is 1.0."""
    a = answer if isinstance(answer, str) else str(answer)
    if not case_sensitive:
        a = a.lower()
        substrings = [s.lower() for s in substrings]
    return 1.0 if all(s in a for s in substrings) else 0.0


def first_number(text: Any) -> Optional[float]:
    """The first number in text (``-``? digits ``.``? digits, any Unicode decimal digits), or None."""
    match = _NUMBER_RE.search(text if isinstance(text, str) else str(text))
    if not match:
        return None
    try:
        return float(match.group())
    except ValueError:
        return None


def numeric_match(answer: Any, expected: float, *, tolerance: float = 0.0) -> float:
    """1.0 when the first number in answer is within tolerance of expected."""
    found = first_number(answer)
    if found is None:
        return 0.0
    return 1.0 if abs(found - expected) <= tolerance else 0.0


def f1_score(answer: Any, reference: str) -> float:
    """Token-level F1 over normalized words (multiset overlap)."""
    pred = normalize(str(answer)).split()
    ref = normalize(reference).split()
    if not pred or not ref:
        return 0.0
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision = common / len(pred)
    recall = common / len(ref)
    return 2 * precision * recall / (precision + recall)


# ---------------------------------------------------------------------------------------------
# SubScore and EvaluationResult

_UNSET: Any = object()


def _number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number, got {type(value).__name__}")
    return float(value)


class SubScore:
    """One component of a grade: ``name``, ``value`` in [0, 1], ``weight`` (default 1.0;
    negative: a penalty), ``info`` (also read and written as ``metadata``) and, for the
    result of ``combine_any``/``combine_all``, the ``children`` it was combined from."""

    __slots__ = ("name", "value", "weight", "children", "info")

    name: str
    value: float
    weight: float
    children: Optional[list[SubScore]]
    info: Optional[dict[str, Any]]

    def __init__(
        self,
        name: str,
        value: float,
        weight: float = 1.0,
        children: Optional[Sequence[SubScore]] = None,
        info: Optional[Mapping[str, Any]] = None,
        metadata: Optional[Mapping[str, Any]] = _UNSET,
    ) -> None:
        if not isinstance(name, str):
            raise TypeError(f"SubScore name must be a str, got {type(name).__name__}")
        v = _number(value, "SubScore value")
        if not 0.0 <= v <= 1.0:
            raise ValueError(f"SubScore value must be between 0.0 and 1.0, got {value!r}")
        if metadata is not _UNSET:
            if info is not None:
                raise TypeError("SubScore: give info or metadata (the same field), not both")
            info = metadata
        if children is not None:
            children = list(children)
            for child in children:
                if not isinstance(child, SubScore):
                    raise TypeError(f"SubScore children must be SubScores, got {type(child).__name__}")
        if info is not None and not isinstance(info, Mapping):
            raise TypeError(f"SubScore info must be a dict, got {type(info).__name__}")
        self.name = name
        self.value = v
        self.weight = _number(weight, "SubScore weight")
        self.children = children
        self.info = None if info is None else dict(info)

    @property
    def metadata(self) -> Optional[dict[str, Any]]:
        """The same as info."""
        return self.info

    @metadata.setter
    def metadata(self, value: Optional[dict[str, Any]]) -> None:
        self.info = value

    @property
    def score(self) -> float:
        """The same as value (HUD keeps it for old code)."""
        return self.value

    def model_copy(self, *, update: Optional[Mapping[str, Any]] = None) -> SubScore:
        """A copy with some fields replaced (as pydantic's, which HUD's code calls)."""
        fields = {"name": self.name, "value": self.value, "weight": self.weight, "children": self.children, "info": self.info}
        for key, val in (update or {}).items():
            fields["info" if key == "metadata" else key] = val
        return SubScore(**fields)

    def model_dump(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "weight": self.weight,
            "value": self.value,
            "children": None if self.children is None else [c.model_dump() for c in self.children],
            "info": self.info,
        }

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, SubScore):
            return NotImplemented
        return self.model_dump() == other.model_dump()

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        extra = "" if self.children is None else f", children={self.children!r}"
        extra += "" if self.info is None else f", info={self.info!r}"
        return f"SubScore(name={self.name!r}, value={self.value!r}, weight={self.weight!r}{extra})"


class EvaluationResult:
    """A combined grade: ``reward`` and its ``subscores``, as ``combine`` returns it. A grader
    may return one: ``reward`` is the score, ``content`` the reason, ``info`` the metadata."""

    __slots__ = ("reward", "done", "content", "info", "isError", "subscores")

    reward: float
    done: bool
    content: Optional[str]
    info: dict[str, Any]
    isError: bool
    subscores: Optional[list[SubScore]]

    def __init__(
        self,
        reward: float = 0.0,
        done: bool = True,
        content: Optional[str] = None,
        info: Optional[Mapping[str, Any]] = None,
        isError: bool = False,  # noqa: N803 (HUD's field name)
        subscores: Optional[Sequence[SubScore]] = None,
    ) -> None:
        self.reward = _number(reward, "EvaluationResult reward")
        self.done = bool(done)
        if content is not None and not isinstance(content, str):
            raise TypeError(f"EvaluationResult content must be a str, got {type(content).__name__}")
        self.content = content
        self.info = {} if info is None else dict(info)
        self.isError = bool(isError)
        self.subscores = None if subscores is None else list(subscores)
        for s in self.subscores or ():
            if not isinstance(s, SubScore):
                raise TypeError(f"EvaluationResult subscores must be SubScores, got {type(s).__name__}")
        self._check_subscores()

    def _check_subscores(self) -> None:
        # HUD's validator: authoring mistakes are warned about, not refused
        if not self.subscores:
            return
        names = [s.name for s in self.subscores]
        dupes = [n for n in names if names.count(n) > 1]
        if dupes:
            warnings.warn(f"Duplicate subscore names: {set(dupes)}", stacklevel=3)
        pos = sum(s.weight for s in self.subscores if s.weight > 0)
        if abs(pos - 1.0) > 0.01:
            warnings.warn(
                f"Positive subscore weights should sum to ~1.0 (got {pos:.4f}). "
                f"Weights represent proportional contributions to the reward.",
                stacklevel=3,
            )
        weighted = sum(s.value * s.weight for s in self.subscores)
        if abs(weighted - self.reward) > 0.01:
            warnings.warn(
                f"Subscores don't match reward: sum(value*weight)={weighted:.4f} but reward={self.reward:.4f}",
                stacklevel=3,
            )

    @classmethod
    def from_float(cls, value: float) -> EvaluationResult:
        return cls(reward=value, done=True)

    def __repr__(self) -> str:
        return f"EvaluationResult(reward={self.reward!r}, subscores={self.subscores!r}, info={self.info!r})"


# ---------------------------------------------------------------------------------------------
# Combining


def dedupe_names(names: Sequence[str]) -> list[str]:
    """Unique names, in order: a repeated name becomes ``name-1``, ``name-2`` ... (counting per
    name from 1), skipping any candidate already used or present in the input."""
    counts: dict[str, int] = {}
    for n in names:
        counts[n] = counts.get(n, 0) + 1
    reserved = set(names)
    usage: dict[str, int] = {}
    used: set[str] = set()
    out: list[str] = []
    for n in names:
        if counts[n] == 1 and n not in used:
            final = n
        else:
            k = usage.get(n, 0)
            while True:
                k += 1
                candidate = f"{n}-{k}"
                if candidate in used or candidate in reserved:
                    continue
                usage[n] = k
                final = candidate
                break
        used.add(final)
        out.append(final)
    return out


def combine_subscores(subscores: Sequence[SubScore]) -> EvaluationResult:
    """Already-resolved subscores as one weighted result: positive weights normalized to sum
    to 1.0, negative weights kept (penalties), duplicate names renamed."""
    if not subscores:
        raise ValueError("subscores must not be empty")
    positive = sum(s.weight for s in subscores if s.weight > 0)
    if positive <= 0:
        raise ValueError("subscores must include at least one positive weight")
    if abs(positive - 1.0) > 0.01:
        warnings.warn(
            f"grader weights sum to {positive:.4f}, not 1.0; normalizing, but the effective weights "
            f"differ from what you set. Make the positive weights sum to 1.0 to silence this.",
            stacklevel=3,
        )
    normalized = [
        s.model_copy(update={"name": name, "weight": s.weight / positive if s.weight > 0 else s.weight})
        for s, name in zip(subscores, dedupe_names([s.name for s in subscores]))
    ]
    reward = float(sum(s.value * s.weight for s in normalized))
    return EvaluationResult(reward=reward, done=True, subscores=normalized)


async def combine(*items: Union[SubScore, Awaitable[SubScore]]) -> EvaluationResult:
    """``await combine(a, b, ...)``: SubScores and awaitables of SubScores (``Grader.grade(...)``)
    resolved, in order, then combined as ``combine_subscores``."""
    resolved: list[Any] = []
    for item in items:
        if not isinstance(item, (SubScore, Awaitable)):
            raise TypeError(f"Expected SubScore or Awaitable[SubScore], got {type(item).__name__}")
    for item in items:
        resolved.append(item if isinstance(item, SubScore) else await item)
    return combine_subscores(resolved)


def _boolean(name: str, weight: float, subscores: Sequence[SubScore], value: float) -> SubScore:
    names = dedupe_names([s.name for s in subscores])
    children = [s.model_copy(update={"name": n}) for s, n in zip(subscores, names)]
    return SubScore(name=name, value=value, weight=weight, children=children)


def combine_any(weight: float, subscores: Sequence[SubScore], *, name: str = "any") -> SubScore:
    """Boolean OR: one SubScore with the maximum value, the inputs (renamed) as children."""
    if not subscores:
        raise ValueError("subscores must not be empty")
    return _boolean(name, weight, subscores, max(s.value for s in subscores))


def combine_all(weight: float, subscores: Sequence[SubScore], *, name: str = "all") -> SubScore:
    """Boolean AND: one SubScore with the minimum value, the inputs (renamed) as children."""
    if not subscores:
        raise ValueError("subscores must not be empty")
    return _boolean(name, weight, subscores, min(s.value for s in subscores))


# ---------------------------------------------------------------------------------------------
# Grader: the base class of reusable graders


def _json_safe(value: Any) -> Any:
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    try:
        return json.loads(json.dumps(value, default=lambda v: f"<{type(v).__name__}: not serializable>"))
    except Exception:
        return f"<{type(value).__name__}: not serializable>"


class Grader:
    """Subclass it and implement ``async def compute_score(cls, **kwargs)`` (a classmethod)
    returning a float, a ``(float, info)`` pair or a SubScore; ``await MyGrader.grade(weight=...,
    **kwargs)`` returns it as a SubScore with the parameters in ``info["_parameters"]``."""

    name: str = "BaseGrader"

    @classmethod
    async def grade(cls, weight: float, name: Optional[str] = None, **kwargs: Any) -> SubScore:
        result: Any = await cls.compute_score(**kwargs)
        if isinstance(result, tuple):
            score, info = result
            result = SubScore(name=cls.name, value=float(score), info=info)
        elif not isinstance(result, SubScore):
            result = SubScore(name=cls.name, value=float(result))
        return result.model_copy(
            update={
                "name": name or cls.name,
                "weight": weight,
                "info": {**(result.info or {}), "_parameters": {k: _json_safe(v) for k, v in kwargs.items()}},
            }
        )

    @classmethod
    async def compute_score(cls, **kwargs: Any) -> Union[float, Tuple[float, dict[str, Any]], SubScore]:
        raise NotImplementedError("Subclasses must implement compute_score")


# ---------------------------------------------------------------------------------------------
# Rubric scoring (autorubric), as sdk/graders.ts's scoreRubric

CannotAssess = Literal["skip", "zero", "partial", "fail"]
Verdict = str


def _squash(s: str) -> str:
    return " ".join(s.split()).lower()


def _field(obj: Any, key: str, default: Any = None) -> Any:
    return obj.get(key, default) if isinstance(obj, Mapping) else getattr(obj, key, default)


def _check_criterion(c: Any, i: int) -> None:
    options = _field(c, "options")
    if options is None:
        return
    label = _field(c, "name") or i
    if len([o for o in options if not _field(o, "na", False)]) < 2:
        raise ValueError(f"criterion {label}: a multi-choice criterion needs at least 2 non-NA options")
    for o in options:
        value = _field(o, "value")
        if not isinstance(value, (int, float)) or not 0 <= value <= 1:
            raise ValueError(f'criterion {label}: option "{_field(o, "label")}" has a value outside [0, 1]')


def _worst_option(options: Sequence[Any], w: float) -> float:
    worst: Any = None
    for o in options:
        if _field(o, "na", False):
            continue
        if worst is None or (_field(o, "value") < _field(worst, "value") if w >= 0 else _field(o, "value") > _field(worst, "value")):
            worst = o
    return _field(worst, "value") * w


def score_rubric(
    criteria: Sequence[Any],
    verdicts: Sequence[Verdict],
    *,
    cannot_assess: CannotAssess = "skip",
    partial_credit: float = 0.5,
    normalize: bool = True,
) -> Optional[float]:
    """Scores verdicts (MET / UNMET / CANNOT_ASSESS, or an option's label) against criteria
    (dicts or objects with ``weight`` (default 10), ``requirement``, ``name``, ``options``).
    None when no criterion counted (never a made-up 0)."""
    if len(criteria) != len(verdicts):
        raise ValueError(f"score_rubric: {len(criteria)} criteria but {len(verdicts)} verdicts")
    total = pos = neg = 0.0
    counted = 0
    for i, (c, raw) in enumerate(zip(criteria, verdicts)):
        _check_criterion(c, i)
        w = _field(c, "weight")
        w = 10.0 if w is None else float(w)
        options = _field(c, "options")
        verdict = _squash(str(raw))
        abstains = False
        value = 0.0
        if options is not None:
            option = next((o for o in options if _squash(str(_field(o, "label"))) == verdict), None)
            if option is None and verdict == "cannot_assess":
                abstains = True
            elif option is None:
                raise ValueError(f'criterion {_field(c, "name") or i}: "{raw}" is not one of its options')
            elif _field(option, "na", False):
                abstains = True
            else:
                value = float(_field(option, "value"))
        else:
            v = verdict.upper()
            if v == "CANNOT_ASSESS":
                abstains = True
            elif v == "MET":
                value = 1.0
            elif v != "UNMET":
                raise ValueError(f'criterion {_field(c, "name") or i}: verdict must be MET, UNMET or CANNOT_ASSESS, got "{raw}"')
        if abstains:
            if cannot_assess == "skip":
                continue
            if cannot_assess == "zero":
                contribution = 0.0
            elif cannot_assess == "partial":
                contribution = partial_credit * w if w > 0 else 0.0
            else:
                contribution = _worst_option(options, w) if options is not None else (0.0 if w > 0 else w)
        else:
            contribution = value * w
        total += contribution
        if w > 0:
            pos += w
        else:
            neg += abs(w)
        counted += 1
    if counted == 0:
        return None
    if not normalize:
        return total
    if pos > 0:
        return min(1.0, max(0.0, total / pos))
    if neg > 0:
        return min(1.0, max(0.0, 1 + total / neg))
    return 0.0


# ---------------------------------------------------------------------------------------------
# Abstaining


class Abstain(Exception):
    """``raise Abstain("why")`` from ``grade`` (or ``grade_group``): no score is honest for this
    thread, and the result says so (outcome "abstained", code GRADER_ABSTAINED, this reason)
    instead of a made-up 0. Returning ``None`` abstains too, as TRL reads a ``None`` reward
    (reason "grade returned None"). Raised from ``grade_group``, every thread of the group
    abstains; in ``grade_group``'s list, ``None`` or an ``Abstain`` abstains that thread alone. A
    reason is cut to 2,000 characters."""

    def __init__(self, reason: str = "the grader abstained") -> None:
        super().__init__(reason)
        self.reason = reason


# ---------------------------------------------------------------------------------------------
# Group rewards: for grade_group, which sees the N completions of one prompt together, as
# sdk/graders.ts's rankInGroup, majorityAgreement, relativeLength and groupSummary


def _finite(x: Any, what: str, i: int) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
        raise ValueError(f"{what}: item {i} must be a finite number or None, got {x!r}")
    return float(x)


def rank_in_group(scores: Sequence[Optional[float]]) -> list[Optional[float]]:
    """Each score's rank within the group, normalised to [0, 1]: the lowest 0, the highest 1,
    ties sharing the mean of the ranks they span (so equal scores get equal rewards). A group
    with one scored item gives it 0.5; None (an abstention) stays None and is not ranked.
    ``rank_in_group([0.2, 0.9, 0.2, 0.5])`` is ``[1/6, 1.0, 1/6, 2/3]``."""
    scored = [(_finite(s, "rank_in_group", i), i) for i, s in enumerate(scores) if s is not None]
    out: list[Optional[float]] = [None] * len(scores)
    n = len(scored)
    if n == 1:
        out[scored[0][1]] = 0.5
    if n <= 1:
        return out
    scored.sort(key=lambda p: p[0])
    i = 0
    while i < n:
        j = i
        while j + 1 < n and scored[j + 1][0] == scored[i][0]:
            j += 1
        rank = (i + j) / 2 / (n - 1)
        for k in range(i, j + 1):
            out[scored[k][1]] = rank
        i = j + 1
    return out


def _majority(answers: Sequence[Any], normalize_text: bool, tie_first: bool = False) -> tuple[list[Optional[str]], Optional[str]]:
    """Each answer's comparison key, and the group's most common one (None when none voted, and on
    a tie unless tie_first: then the tied answer seen first)."""
    keys = [None if a is None else (normalize(a) if normalize_text else str(a)) for a in answers]
    counts = Counter(k for k in keys if k is not None)
    if not counts:
        return keys, None
    ranked = counts.most_common(2)
    if not tie_first and len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return keys, None
    return keys, ranked[0][0]


def majority_agreement(answers: Sequence[Any], *, normalize_text: bool = True) -> list[float]:
    """1.0 for each answer that agrees with the group's most common answer, 0.0 otherwise
    (self-consistency, majority-vote pseudo-labels). Answers are compared after ``normalize``
    (with normalize_text=False, as ``str(answer)``); None answers do not vote and get 0.0. A tie
    for the most common answer means there is no majority: every item gets 0.0.
    ``majority_agreement(["4", "four", "4", "5"])`` is ``[1.0, 0.0, 1.0, 0.0]``."""
    keys, majority = _majority(answers, normalize_text)
    return [1.0 if majority is not None and k == majority else 0.0 for k in keys]


def relative_length(texts: Sequence[Any], *, unit: Literal["chars", "words"] = "chars") -> list[float]:
    """A length reward relative to the group's mean length: ``clamp(2 - len / mean, 0, 1)``,
    where len is a text's length (characters, or with unit="words" whitespace-separated words)
    and mean the group's mean. At or below the mean 1.0, twice the mean or more 0.0, linear
    between; when the mean is 0 every item gets 1.0. ``relative_length(["ab", "abcd", "abcdef"])``
    is ``[1.0, 1.0, 0.5]``. Characters are code points (the TypeScript function counts UTF-16
    units: they differ only past the Basic Multilingual Plane)."""
    lengths = [len(str("" if t is None else t).split()) if unit == "words" else len(str("" if t is None else t)) for t in texts]
    mean = sum(lengths) / len(lengths) if lengths else 0.0
    return [1.0 if mean == 0 else min(1.0, max(0.0, 2 - n / mean)) for n in lengths]


def group_summary(
    scores: Sequence[Optional[float]],
    *,
    threshold: Optional[float] = None,
    answers: Optional[Sequence[Any]] = None,
    normalize_text: bool = True,
) -> dict[str, Any]:
    """One group's statistics: ``{"k", "best", "mean"}`` and, given a threshold, ``"pass_at_k"``
    (1.0 when any of the k scores is at least threshold), and given answers too,
    ``"majority_at_k"`` (1.0 when the most common answer among the scored items, a tie going to
    the one seen first, was given by an item scoring at least threshold: the batch summary's
    rule). k counts the scores that are not None
    (abstentions are left out of every figure); best and mean are None when k is 0."""
    counted = [_finite(s, "group_summary", i) for i, s in enumerate(scores) if s is not None]
    k = len(counted)
    out: dict[str, Any] = {"k": k, "best": max(counted) if k else None, "mean": sum(counted) / k if k else None}
    if threshold is not None:
        out["pass_at_k"] = 1.0 if any(s >= threshold for s in counted) else 0.0
        if answers is not None:
            if len(answers) != len(scores):
                raise ValueError(f"group_summary: {len(scores)} scores but {len(answers)} answers")
            # the batch summary's rule: only scored items vote, a tie goes to the answer seen first,
            # and the majority answer is right when an item giving it reached the threshold
            voting = [None if s is None else a for s, a in zip(scores, answers)]
            keys, majority = _majority(voting, normalize_text, tie_first=True)
            voters = [s for s, key in zip(scores, keys) if majority is not None and key == majority and s is not None]
            out["majority_at_k"] = 1.0 if any(s >= threshold for s in voters) else 0.0
    return out


__all__ = [
    "Abstain",
    "CannotAssess",
    "EvaluationResult",
    "Grader",
    "SubScore",
    "combine",
    "combine_all",
    "combine_any",
    "combine_subscores",
    "contains",
    "contains_all",
    "contains_any",
    "dedupe_names",
    "exact_match",
    "f1_score",
    "first_number",
    "group_summary",
    "majority_agreement",
    "normalize",
    "numeric_match",
    "rank_in_group",
    "relative_length",
    "score_rubric",
]
