"""Outcomes (scored, error, abstained), deadlines, groups, components, provenance and summaries:
grade_batch, grade and the reward function against the real server, and the client's own part
(splitting between groups, merging, the body it sends) against the scripted stand-in."""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

import pytest
from conftest import Reply, Stub, batch_body, thread

import gradebox
from gradebox import Gradebox

# abstains on metadata.abstain, throws on metadata.boom, else scores metadata.i
ABSTAINER = """export async function grade(thread) {
  if (thread.metadata.abstain) return null;
  if (thread.metadata.boom) throw new Error("boom at " + thread.metadata.i);
  return Number(thread.metadata.i ?? 0);
}"""
# never returns on metadata.hang
HANGER = """export async function grade(thread) {
  if (thread.metadata.hang) { for (;;) {} }
  return Number(thread.metadata.i ?? 0);
}"""
# a group grader: each thread scores the size of the group it was graded in
GROUP_SIZE = """export async function gradeGroup(threads) {
  return threads.map(() => threads.length);
}"""


def _create(client: Gradebox, key: str, source: str) -> None:
    client.graders.create_function(key, source=source)


class Indexes:
    """Stands for a numpy array of group indexes: ints only through tolist()."""

    def __init__(self, values: list[int]) -> None:
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def tolist(self) -> list[int]:
        return list(self.values)


def _stub_client(stub: Stub, max_threads: int) -> Gradebox:
    stub.replies.insert(0, Reply(200, {"maxBatchThreads": max_threads, "maxBodyBytes": 1_000_000}))
    # one chunk at a time: the stub answers in arrival order
    return Gradebox(stub.url, api_key="k", max_retries=0, max_concurrency=1)


def _bodies(stub: Stub) -> list[dict[str, Any]]:
    return [batch_body(s) for s in stub.seen if s.path.endswith("/grade-batch")]


def _texts(body: dict[str, Any]) -> list[str]:
    return [t["turns"][-1]["content"] for t in body["threads"]]


# ---- against the real server ----


def test_an_abstention_is_an_outcome_and_the_reward_functions_none(client: Gradebox, new_key: Callable[[str], str], max_batch: int) -> None:
    key = new_key("abstainer")
    _create(client, key, ABSTAINER)
    n = 2 * max_batch + 3
    abstain = {1, max_batch, n - 1}
    threads = [thread(f"c{i}", i=i, abstain=i in abstain) for i in range(n)]

    batch = client.graders.grade_batch(key, threads, summary=True)
    assert [r.outcome for r in batch.results] == ["abstained" if i in abstain else "scored" for i in range(n)]
    for i, result in enumerate(batch.results):
        if i in abstain:
            assert result.score is None and result.error is None
            assert result.abstained is not None and result.abstained.code == "GRADER_ABSTAINED"
            assert result["abstained"]["code"] == "GRADER_ABSTAINED"  # the wire JSON, as dicts
        else:
            assert (result.score, result.abstained) == (float(i), None)
    assert batch.scores() == [None if i in abstain else float(i) for i in range(n)]
    # split into several requests: the summary is the client's, over every result
    summary = batch.summary
    assert summary is not None
    assert summary["count"] == n and summary["outcomes"] == {"scored": n - len(abstain), "error": 0, "abstained": len(abstain)}
    assert summary["min"] == 0 and summary["max"] == n - 2

    reward_fn = client.reward_function(key)
    rewards = reward_fn(["p"] * n, ["c"] * n, i=list(range(n)), abstain=[i in abstain for i in range(n)])
    assert rewards == [None if i in abstain else float(i) for i in range(n)]
    as_float = client.reward_function(key, as_float=True)(["p"] * n, ["c"] * n, i=list(range(n)), abstain=[i in abstain for i in range(n)])
    assert [math.isnan(r) for r in as_float] == [i in abstain for i in range(n)]
    assert all(type(r) is float for r in as_float)


def test_on_error_decides_what_a_failed_item_becomes_beside_abstentions(
    client: Gradebox, new_key: Callable[[str], str], max_batch: int
) -> None:
    key = new_key("abstain-err")
    _create(client, key, ABSTAINER)
    n = max_batch + 2
    columns = {"i": list(range(n)), "abstain": [i == 0 for i in range(n)], "boom": [i == n - 1 for i in range(n)]}
    args = (["p"] * n, ["c"] * n)

    with pytest.raises(gradebox.GraderRuntimeError) as info:
        client.reward_function(key, on_error="raise")(*args, **columns)
    assert (info.value.code, info.value.index) == ("GRADER_ERROR", n - 1)
    assert [f["index"] for f in info.value.body["failures"]] == [n - 1]  # the abstention is no failure
    assert info.value.request_id

    expected = [None, *[float(i) for i in range(1, n - 1)]]
    # the default, the async function's too: a failure is None, as an abstention is
    assert client.reward_function(key)(*args, **columns) == [*expected, None]
    assert client.reward_function(key, on_error=None)(*args, **columns) == [*expected, None]
    assert client.reward_function(key, on_error=-1.0)(*args, **columns) == [*expected, -1.0]  # an abstention stays None
    nan = client.reward_function(key, on_error=None, as_float=True)(*args, **columns)
    assert math.isnan(nan[0]) and math.isnan(nan[-1]) and nan[1] == 1.0

    batch = client.graders.grade_batch(key, [thread("c", i=i, boom=i == 2) for i in range(3)])
    failed = batch.results[2]
    assert failed.outcome == "error" and failed.score is None and failed.abstained is None
    assert failed.error is not None and failed.error.code == "GRADER_ERROR" and "boom at 2" in failed.error.message


def test_grade_raises_grader_abstained_error_on_an_abstention(client: Gradebox, new_key: Callable[[str], str]) -> None:
    key = new_key("abstain-one")
    _create(client, key, ABSTAINER)
    with pytest.raises(gradebox.GraderAbstainedError) as info:
        client.graders.grade(key, thread("c", abstain=True))
    error = info.value
    assert (error.status, error.code) == (422, "ABSTAINED")
    assert isinstance(error, gradebox.UnprocessableEntityError) and not isinstance(error, gradebox.GraderRuntimeError)
    assert error.abstained.code == "GRADER_ABSTAINED" and error.abstained.code in gradebox.ABSTAIN_CODES
    assert isinstance(error.abstained.reason, str)
    scored = client.graders.grade(key, thread("c", i=4), on_unavailable="abstain")
    assert (scored["outcome"], scored["score"], scored["provenance"]["grader"]) == ("scored", 4, key)


def test_provenance_and_a_combined_graders_components_survive_the_split(
    client: Gradebox, graders: dict[str, str], new_key: Callable[[str], str], max_batch: int
) -> None:
    key = new_key("combined")
    parts = [{"graderKey": graders["indexer"], "name": "index", "weight": 1}, {"graderKey": graders["turns"], "name": "turns", "weight": 1}]
    created = client._request("POST", client.graders._path("/combined"), body={"key": key, "mode": "weighted", "graders": parts}, retry=False)[0]
    n = 2 * max_batch + 1
    threads = [thread(f"c{i}", i=i, answer="no", boom=i == 3) for i in range(n)]

    batch = client.graders.grade_batch(key, threads)
    provenance = batch.provenance
    assert provenance is not None
    assert (provenance["grader"], provenance["kind"], provenance["version"]) == (key, "combined", batch.version)
    assert provenance["sourceSha256"] == created["sourceSha256"]
    assert [p["grader"] for p in provenance.get("parts", [])] == [graders["indexer"], graders["turns"]]
    components = batch.components
    assert set(components) == {"index", "turns"}
    assert components["index"] == [None if i == 3 else float(i) for i in range(n)]  # aligned across the requests
    assert components["turns"] == [None if i == 3 else 0.02 for i in range(n)]  # wrong answer, 2 turns

    single = client.graders.grade(graders["indexer"], thread("c", i=1))
    assert single["provenance"]["grader"] == graders["indexer"] and single["provenance"]["kind"] == "function"
    assert single["provenance"]["sourceSha256"] == client.graders.get(graders["indexer"])["sourceSha256"]

    # the reward function logs the components' means, the counts and the version where TRL asks it to
    metrics: list[tuple[str, float]] = []
    extra: dict[str, list[Any]] = {}
    rewards = client.reward_function(key, on_error=None)(
        ["p"] * n,
        ["c"] * n,
        i=list(range(n)),
        answer=["no"] * n,
        boom=[i == 3 for i in range(n)],
        log_metric=lambda name, value: metrics.append((name, value)),
        log_extra=lambda column, values: extra.__setitem__(column, values),
    )
    assert rewards[3] is None and rewards[4] == pytest.approx((4 + 0.02) / 2)  # the weighted mean of the parts
    logged = dict(metrics)
    index_mean = sum(i for i in range(n) if i != 3) / (n - 1)
    assert logged[f"{key}/index"] == pytest.approx(index_mean)
    assert logged[f"{key}/turns"] == pytest.approx(0.02)
    assert (logged[f"{key}/abstained"], logged[f"{key}/errors"], logged[f"{key}/version"]) == (0, 1, batch.version)
    assert extra[f"{key}/outcome"] == ["error" if i == 3 else "scored" for i in range(n)]
    assert len(extra[f"{key}/reason"]) == n and extra[f"{key}/reason"][3].startswith("COMPONENT_FAILED")


def test_a_deadline_abstains_the_unfinished_items(client: Gradebox, new_key: Callable[[str], str], max_batch: int) -> None:
    key = new_key("hanger")
    _create(client, key, HANGER)
    deadline = min(1000, client.limits()["timeoutMs"] // 2)  # before the grader's own time-out
    n = 2 * max_batch
    hang = {max_batch - 1, n - 1}
    threads = [thread("c", i=i, hang=i in hang) for i in range(n)]
    batch = client.graders.grade_batch(key, threads, version=1, deadline_ms=deadline)
    late = [i for i, r in enumerate(batch.results) if r.abstained is not None]
    assert hang <= set(late)
    assert all(batch.results[i].abstained.code == "DEADLINE_EXCEEDED" for i in late)  # type: ignore[union-attr]
    assert all(r.score == i for i, r in enumerate(batch.results) if i not in late)
    assert batch.deadline_exceeded == len(late)

    rewards = client.reward_function(key, version=1, deadline_ms=deadline)(["p"] * n, ["c"] * n, i=list(range(n)), hang=[i in hang for i in range(n)])
    assert all(rewards[i] is None for i in hang)
    assert all(r is None or r == i for i, r in enumerate(rewards))


def test_a_group_grader_gets_whole_groups_across_the_split(client: Gradebox, new_key: Callable[[str], str], max_batch: int) -> None:
    key = new_key("group-size")
    _create(client, key, GROUP_SIZE)
    # groups of 2 and 3, interleaved: more threads than one request holds
    sizes = [2, 3, 2, 3]
    prompt_ids = [g for g, size in enumerate(sizes) for _ in range(size)]
    prompt_ids = prompt_ids[::2] + prompt_ids[1::2]
    assert len(prompt_ids) > max_batch
    threads = [thread("c", prompt_id=f"q{g}") for g in prompt_ids]

    batch = client.graders.grade_batch(key, threads, group_by="prompt_id", summary=True)
    assert [r.score for r in batch.results] == [float(sizes[g]) for g in prompt_ids]
    assert batch.summary is not None and batch.summary["groups"]["groups"] == len(sizes)
    by_index = client.graders.grade_batch(key, threads, groups=prompt_ids)
    assert by_index.scores() == batch.scores()

    rewards = client.reward_function(key, group_by="prompt_id")(["p"] * len(threads), ["c"] * len(threads), prompt_id=[f"q{g}" for g in prompt_ids])
    assert rewards == [float(sizes[g]) for g in prompt_ids]
    with pytest.raises(gradebox.BadRequestError) as info:
        client.graders.grade(key, threads[0])
    assert info.value.code == "GROUP_REQUIRED"


# ---- the client's part, against the scripted stand-in ----


def test_the_new_fields_are_sent_and_a_single_answer_is_taken_as_it_is(stub: Stub) -> None:
    summary = {"count": 2, "outcomes": {"scored": 1, "error": 0, "abstained": 1}, "mean": 0.5}
    stub.replies = [
        Reply(
            200,
            {
                "results": [{"outcome": "scored", "score": 0.5}, {"outcome": "abstained", "abstained": {"code": "DEADLINE_EXCEEDED", "reason": "late"}}],
                "durationMs": 3,
                "version": 2,
                "provenance": {"grader": "g", "kind": "function", "version": 2, "sourceSha256": "ab"},
                "components": {"part": [0.5, None]},
                "summary": summary,
                "deadlineExceeded": 1,
            },
        )
    ]
    c = _stub_client(stub, 10)
    threads = [{"turns": [{"role": "assistant", "content": str(i)}], "metadata": {"q": i}} for i in range(2)]
    batch = c.graders.grade_batch("g", threads, deadline_ms=5000, on_unavailable="abstain", group_by="q", summary={"bins": 4})
    body = _bodies(stub)[0]
    assert (body["onUnavailable"], body["groupBy"], body["summary"]) == ("abstain", "q", {"bins": 4})
    assert 1 <= body["deadlineMs"] <= 5000
    assert batch.summary == summary  # the server's, unsplit
    assert batch.components == {"part": [0.5, None]}
    assert batch.provenance == {"grader": "g", "kind": "function", "version": 2, "sourceSha256": "ab"}
    assert (batch.deadline_exceeded, batch.version, batch.duration_ms) == (1, 2, 3.0)
    assert batch.results[1].abstained == gradebox.Abstained("DEADLINE_EXCEEDED", "late")
    assert isinstance(batch, dict) and batch["results"][0]["score"] == 0.5

    with pytest.raises(ValueError, match="deadline_ms"):
        c.graders.grade_batch("g", threads, deadline_ms=0)
    with pytest.raises(ValueError, match="on_unavailable"):
        c.graders.grade_batch("g", threads, on_unavailable="skip")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        c.graders.grade_batch("g", threads, group_by="q", groups=[0, 1])
    with pytest.raises(ValueError, match="one group index per thread"):
        c.graders.grade_batch("g", threads, groups=[0])


def test_a_split_cuts_between_groups_and_merges_components_and_the_summary(stub: Stub) -> None:
    # groups 0 (3 threads), 1 (2) and 2 (2), interleaved; at most 3 threads a request
    groups = [0, 1, 0, 1, 2, 2, 0]
    threads = [{"turns": [{"role": "assistant", "content": str(i)}]} for i in range(len(groups))]

    def answer(indexes: list[int], scores: list[float | None]) -> Reply:
        results = [
            {"outcome": "scored", "score": s} if s is not None else {"outcome": "error", "error": {"code": "GRADER_ERROR", "message": "x"}}
            for s in scores
        ]
        return Reply(200, {"results": results, "durationMs": 1, "version": 3, "components": {f"c{indexes[0]}": scores}})

    stub.replies = [answer([0, 2, 6], [0.0, 1.0, 1.0]), answer([1, 3], [0.5, None]), answer([4, 5], [0.25, 0.75])]
    c = _stub_client(stub, 3)
    batch = c.graders.grade_batch("g", threads, groups=Indexes(groups), summary={"threshold": 1.0, "bins": 2})
    bodies = _bodies(stub)
    assert [_texts(b) for b in bodies] == [["0", "2", "6"], ["1", "3"], ["4", "5"]]  # whole groups, in input order
    assert [b["groups"] for b in bodies] == [[0, 0, 0], [1, 1], [2, 2]]
    assert [b.get("version") for b in bodies] == [None, 3, 3]
    assert all("summary" in b for b in bodies)

    assert batch.scores() == [0.0, 0.5, 1.0, None, 0.25, 0.75, 1.0]
    assert batch.components == {
        "c0": [0.0, None, 1.0, None, None, None, 1.0],
        "c1": [None, 0.5, None, None, None, None, None],
        "c4": [None, None, None, None, 0.25, 0.75, None],
    }
    summary = batch.summary
    assert summary is not None
    assert summary["count"] == 7 and summary["outcomes"] == {"scored": 6, "error": 1, "abstained": 0}
    assert summary["mean"] == pytest.approx(3.5 / 6)
    assert (summary["min"], summary["max"]) == (0.0, 1.0)
    assert summary["quantiles"] is not None and summary["quantiles"]["p50"] == pytest.approx(0.625)
    assert summary["histogram"] == {"edges": [0.0, 0.5, 1.0], "counts": [2, 4]}
    assert summary["groups"] == {"groups": 3, "k": 3, "meanOfBest": pytest.approx(2.25 / 3), "meanOfMeans": pytest.approx((2 / 3 + 0.5 + 0.5) / 3), "passAtK": pytest.approx(1 / 3)}
    assert batch.duration_ms == 3.0 and batch.version == 3


def test_a_chunk_the_deadline_passed_before_is_abstained_unsent(stub: Stub) -> None:
    stub.replies = [Reply(200, {"results": [{"outcome": "scored", "score": 1}], "durationMs": 1, "version": 1}, delay=0.3)]
    c = _stub_client(stub, 1)
    threads = [{"turns": [{"role": "assistant", "content": str(i)}]} for i in range(3)]
    batch = c.graders.grade_batch("g", threads, deadline_ms=100)
    assert len(_bodies(stub)) == 1  # only the first: the others' deadline had passed
    assert [r.outcome for r in batch.results] == ["scored", "abstained", "abstained"]
    assert batch.results[2].abstained is not None and batch.results[2].abstained.code == "DEADLINE_EXCEEDED"
    assert batch.deadline_exceeded == 2


def test_an_abstained_problem_is_a_grader_abstained_error() -> None:
    problem = {"code": "ABSTAINED", "detail": "GRADER_ABSTAINED: no answer", "abstained": {"code": "GRADER_ABSTAINED", "reason": "no answer"}}
    error = gradebox.errors.error_from_response(422, problem, "r1")
    assert isinstance(error, gradebox.GraderAbstainedError)
    assert error.abstained == gradebox.Abstained("GRADER_ABSTAINED", "no answer")
    assert (error.status, error.code, error.request_id) == (422, "ABSTAINED", "r1")


def test_the_reward_function_logs_only_where_trl_passes_loggers(stub: Stub) -> None:
    results = [
        {"outcome": "scored", "score": 1, "reason": "right"},
        {"outcome": "abstained", "abstained": {"code": "GRADER_ABSTAINED", "reason": "unsure"}},
        {"outcome": "scored", "score": 0},
    ]
    answer = {"results": results, "durationMs": 1, "version": 4, "components": {"format": [1, None, 0.5], "empty": [None, None, None]}}
    stub.replies = [Reply(200, answer), Reply(200, answer)]
    c = _stub_client(stub, 10)
    reward_fn = c.reward_function("g", name="judge", deadline_ms=2000)
    metrics: list[tuple[str, float]] = []
    extra: list[tuple[str, list[Any]]] = []
    rewards = reward_fn(
        ["p"] * 3,
        ["a", "b", "c"],
        log_metric=lambda name, value: metrics.append((name, value)),
        log_extra=lambda column, values: extra.append((column, values)),
        trainer_state=object(),
    )
    assert rewards == [1.0, None, 0.0]
    assert metrics == [
        ("judge/format", 0.75),  # "empty" has no value: no NaN logged
        ("judge/abstained", 1.0),
        ("judge/errors", 0.0),
        ("judge/deadline_exceeded", 0.0),
        ("judge/version", 4.0),
    ]
    assert extra == [
        ("judge/outcome", ["scored", "abstained", "scored"]),
        ("judge/reason", ["right", "GRADER_ABSTAINED: unsure", ""]),
        ("judge/format", [1, None, 0.5]),  # each sample's component beside it in TRL's completions table; "empty" has none
    ]
    body = _bodies(stub)[0]
    assert 1 <= body["deadlineMs"] <= 2000
    assert all(set(t.get("metadata", {})) == set() for t in body["threads"])  # the loggers are no dataset columns
    assert reward_fn(["p"] * 3, ["a", "b", "c"]) == [1.0, None, 0.0]  # without them, nothing is logged and nothing breaks
    assert len(metrics) == 5
