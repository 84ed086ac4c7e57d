"""Reward functions (the shape TRL's GRPOTrainer calls) against the real server."""

from __future__ import annotations

import math
import pickle
import warnings

import pytest

import gradebox
from gradebox import Gradebox, build_threads


class FakeArray:
    """Stands for a numpy array or a tensor: JSON only through tolist()."""

    def __init__(self, values: list[object]) -> None:
        self.values = values

    def tolist(self) -> list[object]:
        return list(self.values)


def test_string_prompts_and_completions_with_dataset_columns(client: Gradebox, graders: dict[str, str]) -> None:
    reward_fn = client.reward_function(graders["exact"])
    assert reward_fn.__name__ == graders["exact"]
    rewards = reward_fn(
        prompts=["2+2?", "3+3?", "capital of France?"],
        completions=["4", "7", "Paris"],
        expected=["4", "6", "Paris"],
        completion_ids=[[1], [2], [3]],
        trainer_state=object(),
    )
    assert rewards == [1.0, 0.0, 1.0]
    assert all(type(r) is float for r in rewards)
    assert client.reward_function(graders["exact"], name="exact_match").__name__ == "exact_match"


def test_chat_message_prompts_and_completions(client: Gradebox, graders: dict[str, str]) -> None:
    reward_fn = client.reward_function(graders["turns"])
    prompts = [
        [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "2+2?"}],
        [{"role": "user", "content": "3+3?"}],
    ]
    completions = [[{"role": "assistant", "content": "4"}], [{"role": "assistant", "content": "five"}]]
    rewards = reward_fn(prompts, completions, answer=["4", "6"])
    assert rewards == pytest.approx([1.03, 0.02])  # right + 3 turns, wrong + 2 turns


def test_the_threads_the_server_receives(client: Gradebox, graders: dict[str, str]) -> None:
    prompts = ["plain", [{"role": "system", "content": "s"}, {"role": "user", "content": "u", "name": "ignored"}], None]
    completions = [
        "done",
        [{"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "image"}, {"type": "text", "text": "b"}]}],
        [{"role": "assistant", "content": None}, {"role": "tool", "content": "42"}],
    ]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        threads = build_threads(
            prompts,
            completions,
            {
                "answer": ["x", {"nested": [1, None]}, 3],
                "score": FakeArray([1, 2.5, float("nan")]),  # a non-finite value is left out
                "odd": [object(), "fine", None],  # so is a value that is not JSON
                "short": ["only one"],  # not one value per completion: not sent, with a warning
                "trainer_state": object(),
                "completion_ids": [[1], [2], [3]],
            },
        )
    assert [str(w.message) for w in caught] == ["gradebox: column 'short' has 1 values for 3 completions; it is not sent as metadata"]
    batch = client.graders.grade_batch(graders["echo"], threads)
    echoed = [r["metadata"] for r in batch["results"] if "metadata" in r]
    assert echoed == [
        {"turns": [["user", "plain"], ["assistant", "done"]], "metadata": {"answer": "x", "score": 1}},
        {
            "turns": [["system", "s"], ["user", "u"], ["assistant", "a\nb"]],
            "metadata": {"answer": {"nested": [1, None]}, "score": 2.5, "odd": "fine"},
        },
        {"turns": [["assistant", ""], ["tool", "42"]], "metadata": {"answer": 3, "odd": None}},
    ]

    only = build_threads(["p"], ["c"], {"answer": ["a"], "other": ["o"]}, columns=["answer"])
    assert only == [{"turns": [{"role": "user", "content": "p"}, {"role": "assistant", "content": "c"}], "metadata": {"answer": "a"}}]
    with pytest.raises(ValueError, match="'missing'"):
        build_threads(["p"], ["c"], {}, columns=["missing"])


def test_many_completions_are_split_and_come_back_in_order(client: Gradebox, graders: dict[str, str], max_batch: int) -> None:
    n = 2 * max_batch + 3
    reward_fn = client.reward_function(graders["indexer"])
    assert reward_fn(["p"] * n, [f"c{i}" for i in range(n)], i=list(range(n))) == [float(i) for i in range(n)]


def test_a_failed_item_is_none_unless_on_error_gives_a_reward_or_raise(client: Gradebox, graders: dict[str, str], max_batch: int) -> None:
    n = max_batch + 2
    boom = [i in (2, n - 1) for i in range(n)]
    args = (["p"] * n, ["c"] * n)
    assert client.reward_function(graders["indexer"])(*args, i=list(range(n)), boom=boom) == [None if boom[i] else float(i) for i in range(n)]
    with pytest.raises(gradebox.GraderRuntimeError) as info:
        client.reward_function(graders["indexer"], on_error="raise")(*args, i=list(range(n)), boom=boom)
    error = info.value
    assert (error.code, error.index, error.status) == ("GRADER_ERROR", 2, 422)
    assert "item 2" in str(error) and "GRADER_ERROR" in str(error) and "boom at 2" in str(error)
    assert [f["index"] for f in error.body["failures"]] == [2, n - 1]
    assert error.request_id

    zeroed = client.reward_function(graders["indexer"], on_error=-1.0)(*args, i=list(range(n)), boom=boom)
    assert zeroed == [-1.0 if boom[i] else float(i) for i in range(n)]
    nan = client.reward_function(graders["indexer"], on_error=float("nan"))(*args, i=list(range(n)), boom=boom)
    assert math.isnan(nan[2]) and nan[3] == 3.0
    with pytest.raises(ValueError, match="on_error"):
        client.reward_function(graders["indexer"], on_error="ignore")  # type: ignore[arg-type]

    # a request that fails as a whole raises whatever on_error says
    with pytest.raises(gradebox.NotFoundError):
        client.reward_function("no-such-grader", on_error=0.0)(["p"], ["c"])


def test_module_level_reward_function_uses_the_environment_and_pickles(client: Gradebox, graders: dict[str, str]) -> None:
    reward_fn = gradebox.reward_function(graders["exact"])
    assert (reward_fn.client.base_url, reward_fn.client.project) == (client.base_url, client.project)
    again = pickle.loads(pickle.dumps(reward_fn))
    assert again.__name__ == graders["exact"]
    assert again(["q"], ["yes"], expected=["yes"]) == [1.0]
    assert reward_fn(["q"], ["no"], expected=["yes"]) == [0.0]


def test_bad_input_is_refused_before_any_request() -> None:
    offline = Gradebox("http://127.0.0.1:9", api_key="k", max_retries=0)  # nothing listens there
    reward_fn = offline.reward_function("any")
    assert reward_fn([], []) == []
    with pytest.raises(ValueError, match="2 prompts for 1 completions"):
        reward_fn(["a", "b"], ["c"])
    with pytest.raises(ValueError, match=r"completion 1\[0\]\.role must be 1 to 64 characters without control characters; it is ''"):
        reward_fn(None, ["ok", [{"role": "", "content": "x"}]])
    with pytest.raises(TypeError, match="completion 0"):
        reward_fn(None, [42])
