"""AsyncGradebox and the async TRL reward function against the real server (asyncio.run in plain
test functions: the suite has no asyncio plugin)."""

from __future__ import annotations

import asyncio
import inspect
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Reply, Stub

import gradebox
from gradebox import AsyncGradebox

# scores metadata.i with a reason and a component; abstains on metadata.abstain; throws on metadata.boom
OUTCOMES = """export async function grade(thread) {
  const m = thread.metadata;
  if (m.boom) throw new Error("boom at " + m.i);
  if (m.abstain) return null;
  return { score: Number(m.i ?? 0), reason: "i=" + m.i, subscores: [{ name: "half", score: Number(m.i ?? 0) / 2 }] };
}"""


@pytest.fixture(scope="module")
def outcomes(client: gradebox.Gradebox, new_key: Callable[[str], str]) -> str:
    key = new_key("outcomes")
    client.graders.create_function(key, source=OUTCOMES)
    return key


def test_the_async_client_makes_the_same_calls_awaited(new_key: Callable[[str], str], max_batch: int) -> None:
    key = new_key("async")
    n = 2 * max_batch + 1

    async def main() -> None:
        async with AsyncGradebox() as c:
            made = await c.graders.create.function(key, source=OUTCOMES, description="made by AsyncGradebox")
            assert (made["key"], made["version"]) == (key, 1)
            assert (await c.graders.get(key))["description"] == "made by AsyncGradebox"
            assert key in [g["key"] async for g in c.graders.iter(page_size=2)]
            assert (await c.graders.grade(key, {"turns": [{"role": "user", "content": "q"}], "metadata": {"i": 3}}))["score"] == 3
            with pytest.raises(gradebox.GraderAbstainedError) as abstained:
                await c.graders.grade(key, {"turns": [{"role": "user", "content": "q"}], "metadata": {"abstain": True}})
            assert abstained.value.abstained.code == "GRADER_ABSTAINED"
            with pytest.raises(gradebox.GraderRuntimeError, match="boom at 7"):
                await c.graders.grade(key, {"turns": [{"role": "user", "content": "q"}], "metadata": {"i": 7, "boom": True}})
            with pytest.raises(gradebox.NotFoundError):
                await c.graders.get("no-such-grader")
            # longer than the server's batch: split, sent concurrently, merged in order with its components and summary
            threads = [{"turns": [{"role": "user", "content": "q"}], "metadata": {"i": i, "abstain": i == 4}} for i in range(n)]
            batch = await c.graders.grade_batch(key, threads, summary=True)
            assert batch.scores() == [None if i == 4 else float(i) for i in range(n)]
            assert batch.results[4].outcome == "abstained"
            assert batch.components["half"] == [None if i == 4 else i / 2 for i in range(n)]
            assert batch.summary is not None and batch.summary["outcomes"]["abstained"] == 1
            # concurrent calls each get a connection; the answers are each their own
            many = await asyncio.gather(*(c.graders.grade(key, {"turns": [{"role": "user", "content": "q"}], "metadata": {"i": i}}) for i in range(6)))
            assert [r["score"] for r in many] == [0, 1, 2, 3, 4, 5]
            await c.graders.lock(key, False)
            return None

    asyncio.run(main())

    # a client used from a second event loop opens new connections there
    c = AsyncGradebox()
    assert asyncio.run(c.graders.get(key))["key"] == key
    assert asyncio.run(c.graders.get(key))["key"] == key


def test_the_async_client_retries_and_reuses_connections_as_the_blocking_one(stub: Stub) -> None:
    limits = {"maxBatchThreads": 10, "maxBodyBytes": 1_000_000}
    # a 503 with retry-after 0 is retried; a kept-alive connection the server closed is retried once at once
    stub.replies = [Reply(503, {"code": "SANDBOX_UNAVAILABLE"}, {"retry-after": "0"}), Reply(200, limits, drop=True), Reply(200, limits)]

    async def main() -> None:
        c = AsyncGradebox(stub.url, api_key="k", max_retries=1)
        assert await c.limits() == limits
        assert await c.limits(refresh=True) == limits
        with pytest.raises(gradebox.AuthenticationError):
            stub.replies = [Reply(401, {"code": "UNAUTHORIZED", "detail": "bad key"})]
            await c.limits(refresh=True)
        await c.aclose()

    asyncio.run(main())
    assert [s.headers["authorization"] for s in stub.seen] == ["Bearer k"] * 4
    assert len({s.port for s in stub.seen[:2]}) == 1  # the retry went on the kept-alive connection

    refused = AsyncGradebox("http://127.0.0.1:9", max_retries=0)  # nothing listens there
    with pytest.raises(gradebox.APIConnectionError, match="cannot reach Gradebox"):
        asyncio.run(refused.limits())


def test_the_async_reward_function_gathered_as_trl_gathers_it(outcomes: str, graders: dict[str, str], max_batch: int) -> None:
    n = max_batch + 2
    exact = gradebox.async_reward_function(graders["exact"], name="exact_match")
    scored = gradebox.async_reward_function(outcomes)
    # TRL takes the async path only for what inspect calls a coroutine function; it names it by __name__
    assert inspect.iscoroutinefunction(exact) and inspect.iscoroutinefunction(scored)
    assert (exact.__name__, scored.__name__) == ("exact_match", outcomes)
    assert list(inspect.signature(scored).parameters) == ["prompts", "completions", "completion_ids", "columns"]
    assert not inspect.iscoroutinefunction(gradebox.reward_function(outcomes))

    metrics: list[tuple[str, float]] = []
    extra: list[tuple[str, list[Any]]] = []
    kwargs = {
        "prompts": [[{"role": "developer", "content": "be brief"}, {"role": "user", "content": f"q{i}"}] for i in range(n)],
        "completions": [[{"role": "assistant", "content": "4" if i % 2 else "5"}] for i in range(n)],
        "completion_ids": [[1, 2]] * n,
        "trainer_state": object(),
        "log_extra": lambda column, values: extra.append((column, values)),
        "log_metric": lambda name, value: metrics.append((name, value)),
        "expected": ["4"] * n,
        "i": list(range(n)),
        "abstain": [i == 1 for i in range(n)],
        "boom": [i == 2 for i in range(n)],
    }

    async def trl_step() -> list[list[float | None]]:
        # as GRPOTrainer._calculate_rewards: every async reward function at once, with the same keyword arguments
        return list(await asyncio.gather(exact(**kwargs), scored(**kwargs)))

    got_exact, got_scored = asyncio.run(trl_step())
    assert got_exact == [1.0 if i % 2 else 0.0 for i in range(n)]
    # an abstention and a failure are None: the one rule of both TRL functions, unless on_error says otherwise
    assert got_scored == [None if i in (1, 2) else float(i) for i in range(n)]
    assert gradebox.reward_function(outcomes)(**{**kwargs, "log_extra": None, "log_metric": None}) == got_scored
    logged = dict(metrics)
    assert (logged[f"{outcomes}/abstained"], logged[f"{outcomes}/errors"], logged["exact_match/errors"]) == (1.0, 1.0, 0.0)
    assert logged[f"{outcomes}/version"] == 1.0
    assert logged[f"{outcomes}/half"] == pytest.approx(sum(i / 2 for i in range(n) if i not in (1, 2)) / (n - 2))
    columns = dict(extra)
    assert columns[f"{outcomes}/outcome"][:4] == ["scored", "abstained", "error", "scored"]
    reasons = columns[f"{outcomes}/reason"]
    assert reasons[0] == "i=0" and reasons[1].startswith("GRADER_ABSTAINED") and reasons[2].startswith("GRADER_ERROR") and "boom at 2" in reasons[2]
    assert columns[f"{outcomes}/half"][:4] == [0.0, None, None, 1.5]

    # on_error as the blocking function's: "raise" names the item, a number replaces it
    with pytest.raises(gradebox.GraderRuntimeError) as info:
        asyncio.run(gradebox.async_reward_function(outcomes, on_error="raise")(**kwargs))
    assert info.value.index == 2
    zeroed = asyncio.run(gradebox.async_reward_function(outcomes, on_error=-1)(prompts=None, completions=["a", "b", "c"], i=[0, 1, 2], boom=[0, 0, 1]))
    assert zeroed == [0.0, 1.0, -1.0]
    # it pickles (TRL's async GRPO sends reward functions to a spawned process) and works there
    again = pickle.loads(pickle.dumps(scored))
    assert inspect.iscoroutinefunction(again) and asyncio.run(again(prompts=["p"], completions=["c"], i=[5])) == [5.0]
