"""verl's custom reward function, graded by a stored grader:

    custom_reward_function.path=pkg://gradebox.verl   (or the path of this file)
    custom_reward_function.name=compute_score          (compute_score_async: verl's reward loop only)

with GRADEBOX_URL, GRADEBOX_PROJECT, GRADEBOX_API_KEY and GRADEBOX_GRADER in the workers'
environment (or ``custom_reward_function.reward_kwargs.grader=…``), or built in code with
``make_compute_score(grader, client=…)``.

verl calls ``compute_score(data_source, solution_str, ground_truth, extra_info, **reward_kwargs)``
once per response (the response's text only, special tokens skipped) and reads a float or a dict
``{"score": …, **extra}`` whose keys must be the same for every response of a batch. It has no
timeout or retry of its own; an exception fails the training step, None fails it too, and NaN
flows into the advantages of the whole group. So:

* a score is the reward;
* an abstention (no score is honest for the response) is ``on_abstain``: 0.0 by default (verl
  cannot leave a response out), or "raise"; GRADEBOX_ON_ABSTAIN sets it;
* a failed item (the grader threw, timed out, …) raises by default (the step fails, with the
  grader's error), or is the reward ``on_error`` (GRADEBOX_ON_ERROR=0, say) gives;
* a request that fails as a whole (no such grader, a bad key, the server down after retries)
  always raises.

NaN is refused for either: verl would spread it over the group's advantages.

The dict (``GRADEBOX_VERL_RESULT=dict``, the default; ``float`` for the bare score) always has the
same keys: ``score``, ``abstained`` and ``failed`` (1.0 or 0.0: verl averages them into its
validation metrics: the abstention and failure rates), ``grader_version``, ``reason`` (the
grader's reason, or the abstention's or error's code and words: strings are dumped with the
generations and skipped by verl's metrics), and one key per component named in
GRADEBOX_COMPONENTS (comma-separated; NaN where a response has none: only logged).

The thread graded: a user turn from ``extra_info`` when it holds the prompt (the field
GRADEBOX_PROMPT_KEY names; by default "prompt", else "question"; a string, or a list of chat
messages), then the response as the assistant's turn. Its metadata: ``extra_info``'s fields (as
TRL's dataset columns are: a grader reads ``metadata.<field>`` under either trainer; the values
that are JSON, numpy values through tolist()), then ``data_source`` and the ground truth under
GRADEBOX_GROUND_TRUTH_KEY (default "ground_truth"), which win over a field of the same name.

This file imports gradebox by its absolute name, because verl may load it by path under a name
of its own."""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from gradebox._adapters import Settings, outcome_value
from gradebox.async_client import AsyncGradebox
from gradebox.client import Gradebox
from gradebox.formats import message_turns
from gradebox.reward import _SKIP, _json_value, reason_of
from gradebox.results import BatchResult
from gradebox.types import Thread, Turn

__all__ = ["ComputeScore", "compute_score", "compute_score_async", "make_compute_score"]

DEFAULTS: dict[str, Any] = {"on_abstain": 0.0, "on_error": "raise"}
_EXTRA = ("VERL_RESULT", "PROMPT_KEY", "GROUND_TRUTH_KEY", "COMPONENTS")
_PROMPT_KEYS = ("prompt", "question")


class ComputeScore:
    """A verl compute_score bound to a grader: ``scorer(data_source, solution_str, ground_truth,
    extra_info=None, **ignored) -> float | dict`` (blocking; verl runs it in a thread pool), and
    ``await scorer.score_async(…)`` (for verl's reward loop). See the module for the mapping."""

    def __init__(
        self,
        settings: Settings,
        client: Gradebox | None = None,
        async_client: AsyncGradebox | None = None,
        *,
        result: str = "dict",
        prompt_key: str | None = None,
        ground_truth_key: str = "ground_truth",
        components: Sequence[str] = (),
    ) -> None:
        if result not in ("dict", "float"):
            raise ValueError(f'result (GRADEBOX_VERL_RESULT) is "dict" or "float", not {result!r}')
        self.settings = settings
        self._client = client
        self._async_client = async_client
        self.result = result
        self.prompt_keys: tuple[str, ...] = _PROMPT_KEYS if prompt_key is None else ((prompt_key,) if prompt_key else ())
        self.ground_truth_key = ground_truth_key
        self.components = tuple(components)
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"ComputeScore({self.settings.grader!r}, result={self.result!r})"

    @property
    def client(self) -> Gradebox:
        with self._lock:
            if self._client is None:
                self._client = Gradebox()
            return self._client

    @property
    def async_client(self) -> AsyncGradebox:
        with self._lock:
            if self._async_client is None:
                self._async_client = AsyncGradebox()
            return self._async_client

    def thread(self, data_source: Any, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None) -> Thread:
        if not isinstance(solution_str, str):
            raise TypeError(f"solution_str is the response's text, not {type(solution_str).__name__}")
        info = extra_info if isinstance(extra_info, Mapping) else {}
        turns: list[Turn] = []
        for name in self.prompt_keys:
            prompt = info.get(name)
            if isinstance(prompt, str):
                turns.append({"role": "user", "content": prompt})
                break
            if isinstance(prompt, Sequence) or callable(getattr(prompt, "tolist", None)):
                listed = prompt.tolist() if callable(getattr(prompt, "tolist", None)) else prompt  # type: ignore[union-attr]
                turns.extend(message_turns(listed, f"extra_info[{name!r}]"))
                break
        turns.append({"role": "assistant", "content": solution_str})
        # extra_info's fields first, as TRL's dataset columns are: a grader reads metadata.<field> under either trainer
        metadata: dict[str, Any] = {}
        for name, value in (*info.items(), ("data_source", data_source), (self.ground_truth_key, ground_truth)):
            converted = _json_value(value)
            if isinstance(name, str) and converted is not _SKIP:
                metadata[name] = converted
        return {"turns": turns, "metadata": metadata}

    def _answer(self, batch: BatchResult, request_ids: list[str | None]) -> float | dict[str, Any]:
        result = batch.results[0]
        score = outcome_value(self.settings, result, request_ids[0] if request_ids else None)
        if self.result == "float":
            return score
        answer: dict[str, Any] = {
            "score": score,
            "abstained": 1.0 if result.outcome == "abstained" else 0.0,
            "failed": 1.0 if result.outcome == "error" else 0.0,
            "grader_version": float(batch.version),
            "reason": reason_of(result),
        }
        components = batch.components
        for name in self.components:
            value = (components.get(name) or [None])[0]
            answer[name] = float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else math.nan
        return answer

    def __call__(
        self, data_source: Any, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None, **_: Any
    ) -> float | dict[str, Any]:
        thread = self.thread(data_source, solution_str, ground_truth, extra_info)
        s = self.settings
        batch, request_ids = self.client.graders._grade_batch(s.grader, [thread], s.version, on_unavailable=s.on_unavailable)
        return self._answer(batch, request_ids)

    async def score_async(
        self, data_source: Any, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None, **_: Any
    ) -> float | dict[str, Any]:
        thread = self.thread(data_source, solution_str, ground_truth, extra_info)
        s = self.settings
        batch, request_ids = await self.async_client.graders._grade_batch(s.grader, [thread], s.version, on_unavailable=s.on_unavailable)
        return self._answer(batch, request_ids)


def make_compute_score(
    grader: str | None = None,
    *,
    client: Gradebox | None = None,
    async_client: AsyncGradebox | None = None,
    on_abstain: str | float | None = None,
    on_error: str | float | None = None,
    version: int | None = None,
    on_unavailable: str | None = None,
    result: str | None = None,
    prompt_key: str | None = None,
    ground_truth_key: str | None = None,
    components: Sequence[str] | str | None = None,
) -> ComputeScore:
    """A ComputeScore from these arguments, else the environment (GRADEBOX_GRADER,
    GRADEBOX_VERSION, GRADEBOX_ON_ABSTAIN, GRADEBOX_ON_ERROR, GRADEBOX_ON_UNAVAILABLE,
    GRADEBOX_VERL_RESULT, GRADEBOX_PROMPT_KEY, GRADEBOX_GROUND_TRUTH_KEY, GRADEBOX_COMPONENTS),
    else the defaults (abstention 0.0, a failure raises, a dict)."""
    overrides = {
        "grader": grader,
        "on_abstain": on_abstain,
        "on_error": on_error,
        "version": version,
        "on_unavailable": on_unavailable,
        "verl_result": result,
        "prompt_key": prompt_key,
        "ground_truth_key": ground_truth_key,
        "components": components if components is None or isinstance(components, str) else ",".join(components),
    }
    settings = Settings.from_env(DEFAULTS, overrides, _EXTRA)
    extra = settings.extra
    named = [c.strip() for c in extra.get("COMPONENTS", "").split(",") if c.strip()]
    return ComputeScore(
        settings,
        client,
        async_client,
        result=extra.get("VERL_RESULT", "dict"),
        prompt_key=extra.get("PROMPT_KEY"),
        ground_truth_key=extra.get("GROUND_TRUTH_KEY", "ground_truth"),
        components=named,
    )


_scorers: dict[tuple[tuple[str, Any], ...], ComputeScore] = {}
_scorers_lock = threading.Lock()


def _scorer(reward_kwargs: Mapping[str, Any]) -> ComputeScore:
    """One ComputeScore per process and configuration (the arguments and the environment): its
    client keeps its connections."""
    known = ("grader", "on_abstain", "on_error", "version", "on_unavailable", "result", "prompt_key", "ground_truth_key", "components")
    chosen = {k: reward_kwargs[k] for k in known if reward_kwargs.get(k) is not None}
    env = [(name, value) for name, value in os.environ.items() if name.startswith("GRADEBOX_")]
    key = tuple(sorted((k, str(v)) for k, v in chosen.items())) + tuple(sorted(env))
    with _scorers_lock:
        scorer = _scorers.get(key)
        if scorer is None:
            scorer = _scorers[key] = make_compute_score(**chosen)
        return scorer


def compute_score(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None, **reward_kwargs: Any
) -> float | dict[str, Any]:
    """verl's ``custom_reward_function.name=compute_score``: configured by the environment, or by
    ``custom_reward_function.reward_kwargs`` (grader, on_abstain, on_error, version, result, …;
    verl's own extra arguments are ignored)."""
    return _scorer(reward_kwargs)(data_source, solution_str, ground_truth, extra_info)


async def compute_score_async(
    data_source: Any, solution_str: str, ground_truth: Any, extra_info: Mapping[str, Any] | None = None, **reward_kwargs: Any
) -> float | dict[str, Any]:
    """As compute_score, awaited on the caller's event loop (verl's reward loop awaits an async
    compute_score; its older batch reward managers call it without awaiting: use compute_score there)."""
    return await _scorer(reward_kwargs).score_async(data_source, solution_str, ground_truth, extra_info)
