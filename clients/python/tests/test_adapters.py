"""The adapters trainers load by name (verl's compute_score, verifiers' reward), loaded as those
trainers load them, against the real server; and the conversions from OpenAI and TRL formats."""

from __future__ import annotations

import asyncio
import functools
import importlib.util
import inspect
import math
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from test_async import OUTCOMES

import gradebox
import gradebox.verifiers
import gradebox.verl
from gradebox import ThreadFormatError, from_messages, from_openai, from_trl, read_thread


@pytest.fixture(scope="module")
def outcomes(client: gradebox.Gradebox, new_key: Callable[[str], str]) -> str:
    key = new_key("adapters")
    client.graders.create_function(key, source=OUTCOMES)
    return key


@pytest.fixture
def grader_env(outcomes: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    monkeypatch.setenv("GRADEBOX_GRADER", outcomes)
    for name in ("GRADEBOX_ON_ABSTAIN", "GRADEBOX_ON_ERROR", "GRADEBOX_VERL_RESULT", "GRADEBOX_COMPONENTS", "GRADEBOX_VERSION"):
        monkeypatch.delenv(name, raising=False)
    gradebox.verl._scorers.clear()
    gradebox.verifiers._default = None
    yield outcomes
    gradebox.verl._scorers.clear()
    gradebox.verifiers._default = None


def _verl_load(path: str, name: str) -> Callable[..., Any]:
    """verl.utils.import_utils.load_module + getattr, as verl's get_custom_reward_fn does it: the
    file executed under a name of verl's own, then wrapped with the config's reward_kwargs."""
    spec = importlib.util.spec_from_file_location(f"custom_module_{hash(os.path.abspath(path))}", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return getattr(module, name)


def test_verl_compute_score_loaded_by_path(grader_env: str, monkeypatch: pytest.MonkeyPatch) -> None:
    path = gradebox.verl.__file__
    compute_score = _verl_load(path, "compute_score")
    info = {"question": "what is i?", "index": 3, "i": 3, "rollout_reward_scores": {}, "num_turns": None, "odd": object()}
    # verl: compute_score(data_source=, solution_str=, ground_truth=, extra_info=) (+ its own keyword arguments)
    got = compute_score(data_source="gsm8k", solution_str="3", ground_truth="3", extra_info=info, reward_router_address=None)
    keys = {"score", "abstained", "failed", "grader_version", "reason"}
    assert got == {"score": 3.0, "abstained": 0.0, "failed": 0.0, "grader_version": 1.0, "reason": "i=3"}
    # the grader sees extra_info's fields as metadata (but a value that is not JSON), the prompt as a user turn
    echo = gradebox.verl.make_compute_score(grader_env).thread("gsm8k", "3", "three", info)
    assert echo["turns"] == [{"role": "user", "content": "what is i?"}, {"role": "assistant", "content": "3"}]
    assert echo["metadata"] == {
        "question": "what is i?",
        "index": 3,
        "i": 3,
        "rollout_reward_scores": {},
        "num_turns": None,
        "data_source": "gsm8k",
        "ground_truth": "three",
    }

    # every answer of a batch has the same keys: a score, an abstention (0.0 by default) and, with on_error set, a failure
    scorer = gradebox.verl.make_compute_score(grader_env, ground_truth_key="i", components=["half"], on_error=-1)
    answers = [scorer("d", "x", gt, {"abstain": gt == 1, "boom": gt == 2}) for gt in (4, 1, 2)]
    assert all(set(a) == keys | {"half"} for a in answers)
    assert [(a["score"], a["abstained"], a["failed"]) for a in answers] == [(4.0, 0.0, 0.0), (0.0, 1.0, 0.0), (-1.0, 0.0, 1.0)]
    assert answers[0]["half"] == 2.0 and math.isnan(answers[1]["half"])
    assert answers[1]["reason"].startswith("GRADER_ABSTAINED") and "boom" in answers[2]["reason"]

    # by default a failure raises (verl fails the step, with the grader's error)
    with pytest.raises(gradebox.GraderRuntimeError, match="boom"):
        compute_score("d", "x", 2, {"boom": True, "i": 2})
    # configured by the environment (verl's workers) or reward_kwargs (verl's config)
    monkeypatch.setenv("GRADEBOX_ON_ABSTAIN", "raise")
    monkeypatch.setenv("GRADEBOX_VERL_RESULT", "float")
    monkeypatch.setenv("GRADEBOX_GROUND_TRUTH_KEY", "i")
    assert compute_score("d", "x", 5, {}) == 5.0
    with pytest.raises(gradebox.GraderAbstainedError):
        compute_score("d", "x", 5, {"abstain": True})
    assert compute_score("d", "x", 5, {"abstain": True}, on_abstain=0.25) == 0.25
    # NaN would poison the group's advantages: refused, as a grader that is not named
    with pytest.raises(ValueError, match="finite"):
        gradebox.verl.make_compute_score(grader_env, on_abstain="nan")
    monkeypatch.delenv("GRADEBOX_GRADER")
    with pytest.raises(gradebox.GradeboxError, match="GRADEBOX_GRADER"):
        gradebox.verl.make_compute_score()
    # the async one, as verl's reward loop awaits it
    compute_async = _verl_load(path, "compute_score_async")
    assert inspect.iscoroutinefunction(compute_async)
    assert asyncio.run(compute_async("d", "x", 6, {}, grader=grader_env)) == 6.0


def _verifiers_load(ref: str) -> Callable[..., Any]:
    """verifiers.v1.utils.loaders: plugged_fn (`pkg.module:function` or `file.py:function`), wrapped by
    load_plugged_fn, called by invoke() with the arguments its signature names."""
    module_path, _, attr = ref.rpartition(":")
    if module_path.endswith(".py"):
        resolved = Path(module_path).resolve()
        spec = importlib.util.spec_from_file_location(resolved.stem, resolved)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    else:
        module = importlib.import_module(module_path)
    fn = getattr(module, attr)

    @functools.wraps(fn)
    def plugged(*args: Any, **kwargs: Any) -> Any:
        return fn(*args, **kwargs)

    def invoke(available: dict[str, Any]) -> Any:
        return plugged(**{name: available[name] for name in inspect.signature(plugged).parameters if name in available})

    return invoke


class Message:
    """A verifiers message: a pydantic model with role and content (parts, for multimodal ones)."""

    def __init__(self, role: str, content: Any) -> None:
        self.role, self.content = role, content


class Part:
    def __init__(self, type: str, text: str | None = None) -> None:
        self.type, self.text = type, text


class Trace:
    def __init__(self, messages: list[Message]) -> None:
        self.messages = messages
        self.info: dict[str, Any] = {}


class TaskData:
    def __init__(self, **fields: Any) -> None:
        self.fields = fields

    def model_dump(self, mode: str = "python", exclude_none: bool = False) -> dict[str, Any]:
        return {k: v for k, v in self.fields.items() if not (exclude_none and v is None)}


def test_verifiers_reward_plugged_by_path(grader_env: str, tmp_path: Path) -> None:
    invoke = _verifiers_load("gradebox.verifiers:reward")
    trace = Trace([Message("system", "s"), Message("user", [Part("text", "what is i?"), Part("image_url")]), Message("assistant", "7")])
    task = TaskData(idx=0, prompt="what is i?", i=7, answer="7", network_allow=["*"], name=None)
    got = asyncio.run(invoke({"task": task, "trace": trace, "runtime": object()}))
    assert got == 7.0
    assert trace.info["gradebox"] == [{"grader": grader_env, "version": 1, "outcome": "scored", "reason": "i=7", "components": {"half": 3.5}}]
    thread = gradebox.verifiers.thread_of(task, trace)
    assert thread["turns"] == [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "what is i?"},
        {"role": "assistant", "content": "7"},
    ]
    assert thread["metadata"] == {"idx": 0, "i": 7, "answer": "7"}  # not the sandbox's fields, not the prompt

    # an abstention and a failure raise: verifiers records the rollout as failed, with the reason
    with pytest.raises(gradebox.GraderAbstainedError, match="GRADER_ABSTAINED"):
        asyncio.run(invoke({"task": TaskData(abstain=True), "trace": Trace([Message("assistant", "a")])}))
    with pytest.raises(gradebox.GraderRuntimeError, match="boom"):
        asyncio.run(invoke({"task": TaskData(boom=True), "trace": Trace([Message("assistant", "a")])}))

    # a file of one's own, plugged by path, with a factory: a number for an abstention, the components as rewards
    mine = tmp_path / "my_rewards.py"
    mine.write_text(
        "from gradebox import AsyncGradebox\nfrom gradebox.verifiers import make_reward\n\n"
        f"reward = make_reward({grader_env!r}, client=AsyncGradebox(), on_abstain=0.0, as_components=True)\n"
    )
    own = _verifiers_load(f"{mine}:reward")
    assert asyncio.run(own({"task": TaskData(i=4), "trace": Trace([Message("assistant", "a")])})) == {"half": 2.0}
    assert asyncio.run(own({"task": TaskData(abstain=True), "trace": Trace([Message("assistant", "a")])})) == 0.0


def test_openai_and_trl_formats_become_threads_by_the_sdks_rules() -> None:
    messages = [
        {"role": "developer", "content": "be brief"},
        {"role": "user", "content": [{"type": "input_text", "text": "look"}, {"type": "image_url", "image_url": {}}, {"type": "text", "text": "here"}]},
        {"role": "assistant", "content": None, "tool_calls": [{"id": "1"}]},
        {"role": "function", "content": "42"},
    ]
    turns = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "look\nhere"},
        {"role": "assistant", "content": ""},
        {"role": "tool", "content": "42"},
    ]
    assert from_messages(messages, {"id": 1}) == {"turns": turns, "metadata": {"id": 1}}
    assert from_openai({"messages": messages, "id": 1, "answer": "x"}) == {"turns": turns, "metadata": {"id": 1, "answer": "x"}}
    assert from_openai({"messages": messages, "id": 1, "answer": "x"}, metadata_columns=["answer"])["metadata"] == {"answer": "x"}
    standard = from_trl("2+2?", "4", {"answer": "4"})
    assert standard == {"turns": [{"role": "user", "content": "2+2?"}, {"role": "assistant", "content": "4"}], "metadata": {"answer": "4"}}
    line = {"prompt": [{"role": "user", "content": "2+2?"}], "completion": [{"role": "assistant", "content": "4"}], "answer": "4"}
    assert read_thread(line) == ("trl-conversational", standard)
    assert read_thread({"prompt": "2+2?", "completion": "4", "answer": "4"}) == ("trl-standard", standard)
    # any other role passes through as sent, as the server takes it (only developer and function are renamed)
    assert [t["role"] for t in from_messages([{"role": "narrator", "content": "x"}, {"role": "developer", "content": "y"}])["turns"]] == [
        "narrator",
        "system",
    ]
    assert read_thread({"messages": messages})[0] == "openai"
    assert read_thread(standard) == ("gradebox", standard)

    for bad, why in [
        ({"messages": [{"role": "", "content": "x"}]}, r"messages\[0\]\.role must be 1 to 64 characters without control characters; it is ''"),
        ({"messages": []}, "messages must be a non-empty list"),
        ({"messages": [{"role": "user", "content": 5}]}, r"messages\[0\]\.content must be a string or a list of content parts"),
        ({"prompt": "p"}, 'needs both "prompt" and "completion"'),
        ({"prompt": "p", "completion": [{"role": "assistant", "content": "c"}]}, "must both be strings .* or both lists"),
        ({"turns": [{"role": "user"}]}, r"turns\[0\]\.content must be a string"),
        ({"other": 1}, 'no "turns", "messages" or "prompt" and "completion"'),
    ]:
        with pytest.raises(ThreadFormatError, match=why):
            read_thread(bad)
