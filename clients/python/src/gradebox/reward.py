"""Reward functions in the shape RL trainers call them (TRL's GRPOTrainer ``reward_funcs``):
``reward_fn(prompts, completions, **dataset_columns) -> list[float | None]``, graded by a stored
grader. None is TRL's "no reward for this sample": an abstention, never a zero."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, cast

from .errors import GRADE_ERROR_STATUS, APIError, GraderRuntimeError
from .formats import message_turns
from .types import Thread, Turn

if TYPE_CHECKING:
    from .async_client import AsyncGradebox
    from .client import Gradebox
    from .results import BatchResult, Result

__all__ = ["EXCLUDED_COLUMNS", "AsyncRewardFunction", "OnError", "RewardFunction", "build_threads", "reason_of"]

#: what a failed item becomes: None (no reward for the sample, as an abstention: the TRL
#: functions' default), this reward, or "raise" (GraderRuntimeError naming the item)
OnError = Literal["raise"] | float | None

#: keyword arguments TRL passes that are not dataset columns: never sent as metadata
EXCLUDED_COLUMNS: frozenset[str] = frozenset({"completion_ids", "trainer_state", "log_metric", "log_extra", "environments"})

_SKIP = object()


def _json_value(value: object, depth: int = 0) -> object:
    """``value`` as plain JSON (numpy/torch values through their ``tolist()``), or _SKIP."""
    if depth > 64:
        return _SKIP
    if value is None or isinstance(value, (bool, str)):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value) if math.isfinite(value) else _SKIP
    if isinstance(value, Mapping):
        out: dict[str, object] = {}
        for k, v in value.items():
            converted = _json_value(v, depth + 1)
            if not isinstance(k, str) or converted is _SKIP:
                return _SKIP
            out[k] = converted
        return out
    if isinstance(value, (list, tuple)):
        items = [_json_value(v, depth + 1) for v in value]
        return _SKIP if any(v is _SKIP for v in items) else items
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        try:
            return _json_value(tolist(), depth + 1)
        except Exception:
            return _SKIP
    return _SKIP


def _messages(value: object, where: str) -> list[Turn]:
    """A prompt's or completion's messages as turns, by the rules of gradebox.formats (OpenAI's
    developer role is system, content parts' text joined, None content is "")."""
    if isinstance(value, Mapping):
        value = [value]
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{where}: expected a string or a list of {{'role', 'content'}} messages, not {type(value).__name__}")
    return message_turns(value, where) if len(value) else []


def _metadata_columns(dataset_columns: Mapping[str, Any], n: int, columns: Sequence[str] | None) -> dict[str, Sequence[object]]:
    """The columns sent as metadata: lists of one value per completion."""
    chosen: dict[str, Sequence[object]] = {}
    names = list(dataset_columns) if columns is None else list(columns)
    for name in names:
        if columns is None and name in EXCLUDED_COLUMNS:
            continue
        if name not in dataset_columns:
            raise ValueError(f"column {name!r} was asked for but not passed (passed: {', '.join(dataset_columns) or 'none'})")
        values = dataset_columns[name]
        if not isinstance(values, (list, tuple)) and callable(getattr(values, "tolist", None)):
            values = values.tolist()  # a numpy array or a tensor
        if not isinstance(values, (list, tuple)):
            if columns is not None:
                raise TypeError(f"column {name!r} is a {type(values).__name__}, not a list of one value per completion")
            continue  # not a dataset column (e.g. TRL's trainer_state)
        if len(values) != n:
            if columns is not None:
                raise ValueError(f"column {name!r} has {len(values)} values for {n} completions")
            warnings.warn(
                f"gradebox: column {name!r} has {len(values)} values for {n} completions; it is not sent as metadata",
                stacklevel=4,
            )
            continue
        chosen[name] = values
    return chosen


def build_threads(
    prompts: Sequence[object] | None,
    completions: Sequence[object],
    dataset_columns: Mapping[str, Any] | None = None,
    *,
    columns: Sequence[str] | None = None,
) -> list[Thread]:
    """The threads a reward function grades: one per completion.

    * turns: the prompt's (a string is one user turn; a list of ``{"role", "content"}`` messages
      is used as it is), then the completion's (a string is one assistant turn; a message list
      is appended). Content may be a list of parts: its text parts are joined with newlines.
    * metadata: each dataset column's value at that index, for the keyword arguments that are
      lists (or arrays) of one value per completion, except TRL's ``completion_ids`` and
      ``trainer_state``; a value that is not JSON (NaN, an object…) is left out of that item's
      metadata. With ``columns``, exactly those columns (an error when one is missing).
    """
    n = len(completions)
    if prompts is not None and len(prompts) != n:
        raise ValueError(f"{len(prompts)} prompts for {n} completions: pass one prompt per completion")
    chosen = _metadata_columns(dataset_columns or {}, n, columns)
    threads: list[Thread] = []
    for i, completion in enumerate(completions):
        turns: list[Turn] = []
        if prompts is not None:
            prompt = prompts[i]
            if isinstance(prompt, str):
                turns.append({"role": "user", "content": prompt})
            elif prompt is not None:
                turns.extend(_messages(prompt, f"prompt {i}"))
        if isinstance(completion, str):
            turns.append({"role": "assistant", "content": completion})
        else:
            turns.extend(_messages(completion, f"completion {i}"))
        metadata: dict[str, Any] = {}
        for name, values in chosen.items():
            value = _json_value(values[i])
            if value is not _SKIP:
                metadata[name] = value
        threads.append({"turns": turns, "metadata": metadata})
    return threads


class _RewardBase:
    """What the blocking and the async reward functions share: their settings, the threads they
    grade, how results become rewards and what they log."""

    __name__: str

    def __init__(
        self,
        client: Any,
        key: str,
        *,
        version: int | None = None,
        on_error: OnError = None,
        columns: Sequence[str] | None = None,
        name: str | None = None,
        deadline_ms: int | None = None,
        on_unavailable: Literal["error", "abstain"] | None = None,
        group_by: str | None = None,
        as_float: bool = False,
    ) -> None:
        if isinstance(on_error, bool) or not (on_error is None or on_error == "raise" or isinstance(on_error, (int, float))):
            raise ValueError(f'on_error must be "raise", None or a number, not {on_error!r}')
        if deadline_ms is not None and (isinstance(deadline_ms, bool) or not isinstance(deadline_ms, int) or deadline_ms < 1):
            raise ValueError(f"deadline_ms must be a whole number of milliseconds >= 1, not {deadline_ms!r}")
        if on_unavailable not in (None, "error", "abstain"):
            raise ValueError(f'on_unavailable is "error" or "abstain", not {on_unavailable!r}')
        self.client = client
        self.key = key
        self.version = version
        self.on_error: OnError = on_error if on_error is None or on_error == "raise" else float(on_error)
        self.columns = None if columns is None else list(columns)
        self.deadline_ms = deadline_ms
        self.on_unavailable = on_unavailable
        self.group_by = group_by
        self.as_float = as_float
        self.__name__ = name or key

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.key!r}, project={self.client.project!r}, on_error={self.on_error!r})"

    def _batch_options(self) -> dict[str, Any]:
        return {"deadline_ms": self.deadline_ms, "on_unavailable": self.on_unavailable, "group_by": self.group_by}

    def _finish(
        self, batch: BatchResult, request_ids: list[str | None], n: int, dataset_columns: Mapping[str, Any]
    ) -> list[float | None]:
        """The rewards of a graded batch (or the error on_error="raise" asks for), after logging
        to TRL's log_metric and log_extra when it passed them."""
        results = batch.results
        if len(results) != n:
            raise APIError(200, "INVALID_RESPONSE", None, f"{len(results)} results for {n} threads")
        failures: list[dict[str, Any]] = []
        rewards: list[float | None] = []
        for i, result in enumerate(results):
            error = result.error
            if error is not None:
                failures.append({"index": i, **result.get("error", {"code": error.code, "message": error.message})})
                rewards.append(None if self.on_error is None or self.on_error == "raise" else cast(float, self.on_error))
            else:
                rewards.append(result.score)  # None for an abstention
        if failures and self.on_error == "raise":
            first = failures[0]
            code = str(first.get("code", "GRADER_ERROR"))
            more = f" (and {len(failures) - 1} more of {n} items failed)" if len(failures) > 1 else ""
            message = (
                f"grader {self.key!r} failed on item {first['index']}: {code}: {first.get('message', '')}{more}; "
                "pass on_error=None (no reward) or on_error=<a reward> to go on without raising"
            )
            body = {**first, "detail": first.get("message", ""), "failures": failures}
            raise GraderRuntimeError(GRADE_ERROR_STATUS.get(code, 422), code, request_ids[int(first["index"])], message, body)
        log_metric = dataset_columns.get("log_metric")
        log_extra = dataset_columns.get("log_extra")
        if callable(log_metric):
            self._log_metrics(cast("Callable[[str, float], Any]", log_metric), batch, len(failures))
        if callable(log_extra):
            self._log_extra(cast("Callable[[str, list[Any]], Any]", log_extra), batch)
        if self.as_float:
            return [math.nan if r is None else r for r in rewards]
        return rewards

    def _log_metrics(self, log_metric: Callable[[str, float], Any], batch: BatchResult, errors: int) -> None:
        for component, values in batch.components.items():
            present = [float(v) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if present:  # a mean of nothing would log NaN
                log_metric(f"{self.__name__}/{component}", sum(present) / len(present))
        log_metric(f"{self.__name__}/abstained", float(sum(r.outcome == "abstained" for r in batch.results)))
        log_metric(f"{self.__name__}/errors", float(errors))
        if self.deadline_ms is not None:
            log_metric(f"{self.__name__}/deadline_exceeded", float(batch.deadline_exceeded))
        log_metric(f"{self.__name__}/version", float(batch.version))

    def _log_extra(self, log_extra: Callable[[str, list[Any]], Any], batch: BatchResult) -> None:
        log_extra(f"{self.__name__}/outcome", [r.outcome for r in batch.results])
        log_extra(f"{self.__name__}/reason", [reason_of(r) for r in batch.results])
        # each sample's parts of its score, beside it in TRL's completions table
        for component, values in batch.components.items():
            if any(v is not None for v in values):
                log_extra(f"{self.__name__}/{component}", list(values))


def reason_of(result: Result) -> str:
    """A result's reason in one line: the grader's reason, or the error's or the abstention's
    code and words."""
    error, abstained = result.error, result.abstained
    if error is not None:
        return f"{error.code}: {error.message}"
    if abstained is not None:
        return f"{abstained.code}: {abstained.reason}"
    return result.reason or ""


class RewardFunction(_RewardBase):
    """``reward_fn(prompts, completions, **dataset_columns) -> list[float | None]``: builds one
    thread per completion (see build_threads), grades them with one grade_batch (split into
    chunks when longer than the server's limit) and returns the rewards in order.

    * A score is its float.
    * An abstention (the grader returned null / None or raised Abstain, the deadline came, an
      unanswering judge or endpoint with ``on_unavailable="abstain"``, every part of a combined
      grader abstained) is None: TRL's "no reward for this sample".
    * A failed item (the grader threw, timed out, returned no number…) is None too
      (``on_error=None``, the default, as AsyncRewardFunction's), counted in ``<name>/errors``
      and explained in ``<name>/reason``; with a number it is that number; with
      ``on_error="raise"`` the call raises GraderRuntimeError with ``index`` (the first failed
      item), its ``code`` and every failure in ``body["failures"]``.
    * ``as_float=True``: a list of floats, NaN where it would be None, for code that needs a
      float for every sample.

    How TRL reads None (and NaN): it turns None into NaN, then sums the reward functions
    weighted with ``nansum``, so a NaN from this function counts as 0 in that sum beside the
    other functions' rewards for the sample; a sample where every reward function gave None or
    NaN has no reward (since TRL 1.6: left out of its group's mean and standard deviation, with
    advantage 0; before, a 0). The per-function mean TRL logs (``rewards/<name>/mean``) skips NaN.

    ``deadline_ms``: the batch answers within that many milliseconds; the unfinished samples are
    abstentions (None). ``group_by``: a dataset column (sent as metadata) naming each sample's
    group, for a group grader. ``on_unavailable``: as grade_batch's.

    When TRL passes ``log_metric`` and ``log_extra`` (GRPOTrainer does), each call logs with
    ``log_metric``: each component's mean over the samples that have it
    (``<name>/<component>``), ``<name>/abstained`` and ``<name>/errors`` (counts in the batch),
    ``<name>/deadline_exceeded`` (with a deadline) and ``<name>/version`` (the grader version);
    and with ``log_extra`` (columns of TRL's completions table, one value per sample):
    ``<name>/outcome``, ``<name>/reason`` (the grader's reason, or the error's or abstention's
    code and reason) and ``<name>/<component>`` for each component some sample has. ``<name>`` is ``name``,
    default the grader key (also ``__name__``, what TRL logs the reward under). A request that
    fails as a whole (unknown grader, bad key, server down after retries) always raises.

    TRL runs a blocking reward function on its training thread, one after another: with several
    graders, or a slow one, AsyncRewardFunction lets TRL grade them at once."""

    def __init__(self, client: Gradebox, key: str, *, on_error: OnError = None, **options: Any) -> None:
        super().__init__(client, key, on_error=on_error, **options)

    def __call__(self, prompts: Sequence[object] | None, completions: Sequence[object], **dataset_columns: Any) -> list[float | None]:
        threads = build_threads(prompts, completions, dataset_columns, columns=self.columns)
        if not threads:
            return []
        batch, request_ids = self.client.graders._grade_batch(self.key, threads, self.version, **self._batch_options())
        return self._finish(batch, request_ids, len(threads), dataset_columns)


async def _trl_signature(prompts=None, completions=None, completion_ids=None, **columns):  # type: ignore[no-untyped-def]  # noqa: ANN001, ANN003, ANN202
    """The signature AsyncRewardFunction shows to inspect (see there)."""


class AsyncRewardFunction(_RewardBase):
    """The async reward function for TRL's GRPOTrainer: ``await reward_fn(prompts=…,
    completions=…, completion_ids=…, trainer_state=…, log_extra=…, log_metric=…, **columns)
    -> list[float | None]``. TRL gathers its async reward functions concurrently on an event
    loop of its own (a blocking one runs on the training thread, one after another), so several
    graders, or one slow grader beside TRL's other async functions, grade at once.

    The same rewards and logs as RewardFunction (see there), and the same rule: an abstention
    is None, and so is a failed item unless ``on_error`` says otherwise (a number replaces it,
    ``"raise"`` raises GraderRuntimeError).

    TRL picks the async path with ``inspect.iscoroutinefunction(reward_fn)``, which is True for
    ``async def`` functions only (and, since Python 3.12, what markcoroutinefunction marks); an
    object with an ``async def __call__`` fails it before 3.12. So this class carries the code
    object of an ``async def`` with TRL's parameters, as compiled functions (Cython's) do, which
    inspect accepts as function-like on every version: the object stays picklable (TRL's async
    GRPO sends reward functions to a spawned process) and names itself (``__name__``)."""

    __code__ = _trl_signature.__code__
    __defaults__ = _trl_signature.__defaults__
    __kwdefaults__ = _trl_signature.__kwdefaults__

    def __init__(self, client: AsyncGradebox, key: str, *, on_error: OnError = None, **options: Any) -> None:
        super().__init__(client, key, on_error=on_error, **options)

    async def __call__(
        self, prompts: Sequence[object] | None = None, completions: Sequence[object] | None = None, **dataset_columns: Any
    ) -> list[float | None]:
        if completions is None:
            raise TypeError("completions is required: one completion per sample")
        threads = build_threads(prompts, completions, dataset_columns, columns=self.columns)
        if not threads:
            return []
        batch, request_ids = await self.client.graders._grade_batch(self.key, threads, self.version, **self._batch_options())
        return self._finish(batch, request_ids, len(threads), dataset_columns)
