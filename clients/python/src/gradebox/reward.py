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
from .types import ROLES, Thread, Turn

if TYPE_CHECKING:
    from .client import Gradebox
    from .results import BatchResult

__all__ = ["EXCLUDED_COLUMNS", "OnError", "RewardFunction", "build_threads"]

#: what a failed item becomes: "raise" (GraderRuntimeError naming the item), None (no reward
#: for the sample, as an abstention), or this reward
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


def _content(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if content is None:  # e.g. an assistant message that only calls tools
        return ""
    if isinstance(content, Sequence):  # multi-part content: its text parts
        texts = [p.get("text") for p in content if isinstance(p, Mapping) and p.get("type") == "text"]
        if all(isinstance(t, str) for t in texts):
            return "\n".join(cast("list[str]", texts))
    raise TypeError(f"{where}: content must be a string (or a list of text parts), not {type(content).__name__}")


def _messages(value: object, where: str) -> list[Turn]:
    if isinstance(value, Mapping):
        value = [value]
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise TypeError(f"{where}: expected a string or a list of {{'role', 'content'}} messages, not {type(value).__name__}")
    turns: list[Turn] = []
    for j, message in enumerate(value):
        if not isinstance(message, Mapping):
            raise TypeError(f"{where}, message {j}: a message is a dict with role and content, not {type(message).__name__}")
        role = message.get("role")
        if role not in ROLES:
            raise ValueError(f"{where}, message {j}: role {role!r} is not one of {', '.join(ROLES)}")
        turns.append(cast(Turn, {"role": role, "content": _content(message.get("content"), f"{where}, message {j}")}))
    return turns


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


class RewardFunction:
    """``reward_fn(prompts, completions, **dataset_columns) -> list[float | None]``: builds one
    thread per completion (see build_threads), grades them with one grade_batch (split into
    chunks when longer than the server's limit) and returns the rewards in order.

    * A score is its float.
    * An abstention (the grader returned null / None or raised Abstain, the deadline came, an
      unanswering judge or endpoint with ``on_unavailable="abstain"``, every part of a combined
      grader abstained) is None: TRL's "no reward for this sample".
    * A failed item (the grader threw, timed out, returned no number…) raises
      GraderRuntimeError with ``index`` (the first failed item), its ``code`` and every failure
      in ``body["failures"]`` (``on_error="raise"``, the default); with ``on_error=None`` it is
      None, with a number that number.
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
    and with ``log_extra``: ``<name>/outcome`` and ``<name>/reason`` (one value per sample: the
    grader's reason, or the error's or abstention's code and reason). ``<name>`` is ``name``,
    default the grader key (also ``__name__``, what TRL logs the reward under). A request that
    fails as a whole (unknown grader, bad key, server down after retries) always raises."""

    __name__: str

    def __init__(
        self,
        client: Gradebox,
        key: str,
        *,
        version: int | None = None,
        on_error: OnError = "raise",
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
        return f"RewardFunction({self.key!r}, project={self.client.project!r}, on_error={self.on_error!r})"

    def __call__(self, prompts: Sequence[object] | None, completions: Sequence[object], **dataset_columns: Any) -> list[float | None]:
        log_metric = dataset_columns.get("log_metric")
        log_extra = dataset_columns.get("log_extra")
        threads = build_threads(prompts, completions, dataset_columns, columns=self.columns)
        if not threads:
            return []
        batch, request_ids = self.client.graders._grade_batch(
            self.key,
            threads,
            self.version,
            deadline_ms=self.deadline_ms,
            on_unavailable=self.on_unavailable,
            group_by=self.group_by,
        )
        results = batch.results
        if len(results) != len(threads):
            raise APIError(200, "INVALID_RESPONSE", None, f"{len(results)} results for {len(threads)} threads")
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
            more = f" (and {len(failures) - 1} more of {len(threads)} items failed)" if len(failures) > 1 else ""
            message = (
                f"grader {self.key!r} failed on item {first['index']}: {code}: {first.get('message', '')}{more}; "
                "pass on_error=None (no reward) or on_error=<a reward> to go on without raising"
            )
            body = {**first, "detail": first.get("message", ""), "failures": failures}
            raise GraderRuntimeError(GRADE_ERROR_STATUS.get(code, 422), code, request_ids[int(first["index"])], message, body)
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
        reasons: list[str] = []
        for result in batch.results:
            error, abstained = result.error, result.abstained
            if error is not None:
                reasons.append(f"{error.code}: {error.message}")
            elif abstained is not None:
                reasons.append(f"{abstained.code}: {abstained.reason}")
            else:
                reasons.append(result.reason or "")
        log_extra(f"{self.__name__}/outcome", [r.outcome for r in batch.results])
        log_extra(f"{self.__name__}/reason", reasons)
