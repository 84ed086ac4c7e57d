"""A reward function for verifiers (v1) and prime-rl, graded by a stored grader:

    [env.taskset.task.rewards]
    gradebox = { fn = "gradebox.verifiers:reward", weight = 1.0 }

with GRADEBOX_URL, GRADEBOX_PROJECT, GRADEBOX_API_KEY and GRADEBOX_GRADER in the environment, or
``reward = make_reward("exact-match", client=AsyncGradebox(…))`` in a file of your own
(``fn = "my_rewards.py:reward"``).

verifiers calls a plugged reward ``async``, with the arguments it names among ``task`` (the task's
data), ``trace`` (the rollout) and ``runtime``; this one names ``task`` and ``trace`` (no runtime,
so it also scores offline). It reads a float, or ``{name: float}`` (each recorded as a reward and
summed into the rollout's total with the plugged weight). None or an exception records the
rollout as failed, with the error in its trace; NaN makes the total NaN. So:

* a score is the reward (the float; the name is the plugged one);
* an abstention raises GraderAbstainedError by default: verifiers records the rollout as failed
  with the abstention's code and reason, rather than invent a reward; ``on_abstain`` (or
  GRADEBOX_ON_ABSTAIN) set to a number gives that reward instead;
* a failed item raises GraderRuntimeError (the rollout fails, the grader's error in its trace),
  or is the reward ``on_error`` (GRADEBOX_ON_ERROR) gives;
* NaN is refused for either.

``as_components=True``: ``{component: value}`` instead of the float: verifiers sums them (with the
plugged weight) into the total, so use it only for a grader whose components add up to its
score (a weighted combined grader's do).

The thread graded: ``trace.messages`` (the final branch: prompt, replies, tool calls' results) as
turns, by gradebox.formats' rules; its metadata, the task's data but the fields that describe the
sandbox (prompt, system_prompt, image, workdir, network_*, artifacts, timeout, resources). When the
trace has an ``info`` dict, the grader's reason, components and version are added to
``trace.info["gradebox"]``, so they are saved with the rollout."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gradebox._adapters import Settings, outcome_value
from gradebox.async_client import AsyncGradebox
from gradebox.formats import message_turns
from gradebox.reward import _SKIP, _json_value, reason_of
from gradebox.types import Thread

__all__ = ["make_reward", "reward"]

DEFAULTS: dict[str, Any] = {"on_abstain": "raise", "on_error": "raise"}
#: TaskData's fields that describe the rollout's sandbox, not the task's answer
_NOT_METADATA = frozenset(
    {"prompt", "system_prompt", "image", "workdir", "network_allow", "network_block", "artifacts", "timeout", "resources"}
)


def _task_data(task: object) -> dict[str, Any]:
    if task is None:
        return {}
    dump = getattr(task, "model_dump", None)
    data = dump(mode="json", exclude_none=True) if callable(dump) else task
    if not isinstance(data, Mapping):
        data = getattr(task, "__dict__", {})
    out: dict[str, Any] = {}
    for name, value in data.items():
        converted = _json_value(value)
        if isinstance(name, str) and name not in _NOT_METADATA and converted is not _SKIP:
            out[name] = converted
    return out


def thread_of(task: object, trace: object) -> Thread:
    """The thread a rollout is graded as (see the module)."""
    messages = getattr(trace, "messages", None)
    if messages is None and isinstance(trace, Mapping):
        messages = trace.get("messages")
    if callable(messages):
        messages = messages()
    return {"turns": message_turns(list(messages or []), "trace.messages"), "metadata": _task_data(task)}


def make_reward(
    grader: str | None = None,
    *,
    client: AsyncGradebox | None = None,
    on_abstain: str | float | None = None,
    on_error: str | float | None = None,
    version: int | None = None,
    on_unavailable: str | None = None,
    as_components: bool = False,
    name: str = "gradebox",
) -> Any:
    """An ``async def reward(task, trace)`` for verifiers, from these arguments, else the
    environment (GRADEBOX_GRADER, GRADEBOX_VERSION, GRADEBOX_ON_ABSTAIN, GRADEBOX_ON_ERROR,
    GRADEBOX_ON_UNAVAILABLE), else the defaults (an abstention and a failure raise)."""
    overrides = {"grader": grader, "on_abstain": on_abstain, "on_error": on_error, "version": version, "on_unavailable": on_unavailable}
    settings = Settings.from_env(DEFAULTS, overrides)
    holder: dict[str, AsyncGradebox] = {} if client is None else {"client": client}

    async def reward(task: Any = None, trace: Any = None) -> float | dict[str, float]:
        if trace is None:
            raise TypeError("reward(task, trace): verifiers passes the rollout's trace; it is missing")
        thread = thread_of(task, trace)
        graders = holder.setdefault("client", AsyncGradebox()).graders
        batch, request_ids = await graders._grade_batch(
            settings.grader, [thread], settings.version, on_unavailable=settings.on_unavailable
        )
        result = batch.results[0]
        components = {k: v[0] for k, v in batch.components.items() if isinstance(v[0], (int, float))}
        info = getattr(trace, "info", None)
        if isinstance(info, dict):
            record = {"grader": settings.grader, "version": batch.version, "outcome": result.outcome, "reason": reason_of(result)}
            if components:
                record["components"] = components
            info.setdefault("gradebox", []).append(record)
        score = outcome_value(settings, result, request_ids[0] if request_ids else None)
        if as_components and components and result.outcome == "scored":
            return {k: float(v) for k, v in components.items()}
        return score

    reward.__name__ = reward.__qualname__ = name
    reward.settings = settings  # type: ignore[attr-defined]
    return reward


_default: Any = None


async def reward(task: Any = None, trace: Any = None) -> float | dict[str, float]:
    """``fn = "gradebox.verifiers:reward"``: the grader GRADEBOX_GRADER names, configured by the
    environment (read at the first call)."""
    global _default
    if _default is None:
        _default = make_reward()
    return await _default(task=task, trace=trace)
