"""client.graders against the real server."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import EXACT, thread

import gradebox
from gradebox import Gradebox

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def test_limits_are_read_from_the_server(client: Gradebox, max_batch: int) -> None:
    limits = client.limits()
    assert limits["maxBatchThreads"] == max_batch
    assert limits["maxSourceBytes"] == 65536
    assert all(isinstance(limits[name], int) for name in ("maxBodyBytes", "maxTurns", "maxContentChars", "timeoutMs", "memoryMb"))
    assert client.limits() is limits  # read once per client


def test_create_get_list_lock_delete(client: Gradebox, new_key: Callable[[str], str]) -> None:
    key = new_key("life")
    created = client.graders.create_function(key, source=EXACT, description="exact match")
    assert (created["key"], created["kind"], created["version"], created["locked"]) == (key, "function", 1, False)
    assert created["description"] == "exact match"
    assert created["source"] == EXACT
    assert any("StringThread" in w for w in created["warnings"])  # the parameter is not annotated

    got = client.graders.get(key)
    assert (got["key"], got["source"], got["sourceSha256"]) == (key, EXACT, created["sourceSha256"])
    assert key in [g["key"] for g in client.graders.list()]

    assert client.graders.lock(key)["locked"] is True
    with pytest.raises(gradebox.ConflictError) as info:
        client.graders.delete(key)
    assert (info.value.status, info.value.code) == (409, "GRADER_LOCKED")
    assert "locked" in info.value.message
    assert client.graders.get(key)["locked"] is True  # still there

    assert client.graders.lock(key, locked=False)["locked"] is False
    client.graders.delete(key)
    with pytest.raises(gradebox.NotFoundError) as missing:
        client.graders.get(key)
    assert missing.value.code == "GRADER_NOT_FOUND"
    assert key not in [g["key"] for g in client.graders.list()]


def test_get_lock_delete_take_grader_key_as_the_graders_page_writes_them(client: Gradebox, new_key: Callable[[str], str]) -> None:
    # adaptive.graders.get(grader_key=...), .lock(grader_key=..., locked=True), .delete(grader_key=...)
    key = new_key("by-name")
    client.graders.create_function(key, source=EXACT)
    assert client.graders.get(grader_key=key)["key"] == key
    assert client.graders.lock(grader_key=key, locked=True)["locked"] is True
    with pytest.raises(gradebox.ConflictError):
        client.graders.delete(grader_key=key)
    assert client.graders.lock(grader_key=key, locked=False)["locked"] is False
    client.graders.delete(grader_key=key)
    with pytest.raises(gradebox.NotFoundError):
        client.graders.get(key)
    with pytest.raises(gradebox.GradeboxError, match="exactly one"):
        client.graders.get(key, grader_key=key)
    with pytest.raises(gradebox.GradeboxError, match="exactly one"):
        client.graders.delete()


def test_list_follows_pages(client: Gradebox, new_key: Callable[[str], str]) -> None:
    keys = [new_key("page") for _ in range(5)]
    for key in keys:
        client.graders.create_function(key, source=EXACT)
    first = client.graders.list_page(limit=2)
    assert len(first["data"]) == 2 and first["nextCursor"] is not None
    paged = [g["key"] for g in client.graders.list(page_size=2)]
    assert paged == sorted(paged) and len(paged) == len(set(paged))
    assert set(keys) <= set(paged)
    assert paged == [g["key"] for g in client.graders.list()]


def test_create_from_a_path_and_exactly_one_of_source_or_path(client: Gradebox, new_key: Callable[[str], str], tmp_path: Path) -> None:
    file = tmp_path / "grader.ts"
    file.write_text(EXACT, encoding="utf-8")
    key = new_key("file")
    assert client.graders.create_function(key, path=file)["source"] == EXACT
    with pytest.raises(gradebox.GradeboxError, match="exactly one"):
        client.graders.create_function(new_key("none"))
    with pytest.raises(gradebox.GradeboxError, match="exactly one"):
        client.graders.create_function(new_key("both"), source=EXACT, path=file)
    with pytest.raises(gradebox.ConflictError) as info:
        client.graders.create_function(key, source=EXACT)
    assert info.value.code == "GRADER_EXISTS"


def test_grade_scores_a_thread(client: Gradebox, graders: dict[str, str]) -> None:
    right = client.graders.grade(graders["exact"], thread(" 4 ", expected="4"))
    assert right["score"] == 1 and right["version"] == 1 and right["durationMs"] >= 0
    assert client.graders.grade(graders["exact"], thread("5", expected="4"))["score"] == 0
    assert client.graders.grade(graders["indexer"], thread("x", i=7.5), version=1)["score"] == 7.5
    no_metadata = {"turns": [{"role": "assistant", "content": ""}], "metadata": None}
    assert client.graders.grade(graders["exact"], no_metadata)["score"] == 1  # "" == ""
    with pytest.raises(gradebox.NotFoundError) as info:
        client.graders.grade(graders["exact"], thread("4"), version=99)
    assert info.value.code == "VERSION_NOT_FOUND"
    with pytest.raises(gradebox.NotFoundError) as missing:
        client.graders.grade("no-such-grader", thread("4"))
    assert missing.value.code == "GRADER_NOT_FOUND"


def test_a_grader_that_fails_raises_grader_runtime_error(client: Gradebox, graders: dict[str, str], new_key: Callable[[str], str]) -> None:
    with pytest.raises(gradebox.GraderRuntimeError) as info:
        client.graders.grade(graders["indexer"], thread("x", i=3, boom=True))
    error = info.value
    assert isinstance(error, gradebox.UnprocessableEntityError)
    assert (error.status, error.code) == (422, "GRADER_ERROR")
    assert "boom at 3" in error.message
    assert error.line == 2  # the throw, in the source as submitted
    assert error.request_id and UUID.match(error.request_id)

    key = new_key("nan")
    client.graders.create_function(key, source="export async function grade(t) { return t.metadata.nan ? NaN : 1; }")
    with pytest.raises(gradebox.GraderRuntimeError) as nan:
        client.graders.grade(key, thread("x", nan=True))
    assert nan.value.code == "INVALID_SCORE"


def test_a_bad_source_raises_grader_validation_error(client: Gradebox, new_key: Callable[[str], str]) -> None:
    key = new_key("bad")
    with pytest.raises(gradebox.GraderValidationError) as syntax:
        client.graders.create_function(key, source="export async function grade(thread) {\n  return 1 +;\n}")
    assert (syntax.value.status, syntax.value.code, syntax.value.check) == (422, "VALIDATION_FAILED", "syntax")
    assert (syntax.value.line, syntax.value.column) == (2, 13)  # the ";", 1-based
    with pytest.raises(gradebox.GraderValidationError) as structure:
        client.graders.create_function(key, source="export function grade(thread) { return 1; }")
    assert structure.value.check == "structure"
    assert "async" in structure.value.message
    with pytest.raises(gradebox.NotFoundError):
        client.graders.get(key)  # nothing was saved


def test_a_wrong_key_raises_authentication_error_with_the_request_id(client: Gradebox) -> None:
    wrong = Gradebox(client.base_url, project=client.project, api_key="gbx_wrong")
    with pytest.raises(gradebox.AuthenticationError) as info:
        wrong.graders.list()
    error = info.value
    assert (error.status, error.code) == (401, "UNAUTHORIZED")
    assert error.request_id and UUID.match(error.request_id)
    assert error.body["requestId"] == error.request_id
    with pytest.raises(gradebox.AuthenticationError):
        Gradebox(client.base_url, api_key="").limits()  # no key at all

    other = Gradebox(client.base_url, project="not-this-keys-project", api_key=client._api_key)
    with pytest.raises(gradebox.NotFoundError) as project:
        other.graders.list()
    assert project.value.code == "PROJECT_NOT_FOUND"


def test_a_malformed_thread_is_a_bad_request(client: Gradebox, graders: dict[str, str]) -> None:
    with pytest.raises(gradebox.BadRequestError) as info:
        client.graders.grade(graders["exact"], {"turns": [{"role": "", "content": "x"}]})
    assert info.value.code == "INVALID_REQUEST"
    assert "role" in info.value.message


def test_grade_batch_splits_past_the_server_limit_and_keeps_order(client: Gradebox, graders: dict[str, str], max_batch: int) -> None:
    n = 3 * max_batch + 2
    threads = [thread(f"c{i}", i=i, boom=i in (3, n - 1)) for i in range(n)]
    # one request with all of them is refused: the client must split
    with pytest.raises(gradebox.PayloadTooLargeError) as refused:
        client._request(
            "POST", f"/v1/projects/{client.project}/graders/{graders['indexer']}/grade-batch", body={"threads": threads}, retry=False
        )
    assert refused.value.code == "BATCH_TOO_LARGE"

    batch = client.graders.grade_batch(graders["indexer"], threads)
    assert batch["version"] == 1
    assert len(batch["results"]) == n
    for i, result in enumerate(batch["results"]):
        if i in (3, n - 1):
            assert "error" in result, (i, result)
            assert result["error"]["code"] == "GRADER_ERROR"
            assert f"boom at {i}" in result["error"]["message"]
        else:
            assert result == {"outcome": "scored", "score": i}, (i, result)
            assert (result.outcome, result.score, result.error, result.abstained) == ("scored", i, None, None)

    small = client.graders.grade_batch(graders["exact"], [thread("4", expected="4"), thread("5", expected="4")], version=1)
    assert [r.get("score") for r in small["results"]] == [1, 0]


def test_create_code_takes_snake_case_and_answers_the_whole_definition(client: Gradebox, new_key: Callable[[str], str]) -> None:
    key = new_key("code")
    made = client.graders.create.code(key, languages=["python"], max_tests=8, abs_tol=0.5, compare="float", limits={"cpu_ms": 700})
    assert (made["key"], made["kind"]) == (key, "code")
    code = made["code"]
    assert (code["maxTests"], code["absTol"], code["compare"]) == (8, 0.5, "float")
    assert code["limits"] == {"cpuMs": 700, "memoryMb": 256, "outputBytes": 65536}
    assert client.graders.get(key)["code"] == code
    with pytest.raises(gradebox.BadRequestError) as bad:
        client.graders.create.code(new_key("code"), limits={"cpu_ms": 60_000})
    assert bad.value.code == "INVALID_REQUEST" and "cpuMs" in bad.value.message


def test_create_every_kind_takes_snake_case(client: Gradebox, graders: dict[str, str], new_key: Callable[[str], str]) -> None:
    # a combined grader of two function graders, graded through
    key = new_key("combined")
    made = client.graders.create.combined(key, mode="weighted", graders=[{"grader_key": graders["exact"], "weight": 3}, {"graderKey": graders["indexer"], "weight": 1}])
    assert (made["key"], made["kind"]) == (key, "combined")
    assert client.graders.grade(key, thread("4", expected="4", i=1))["score"] == 1
    # a judge's fields reach the server in its names: a model that is not registered is the answer, not a missing field
    with pytest.raises(gradebox.NotFoundError) as missing:
        client.graders.create.binary_judge(new_key("judge"), judge_model="not-registered", criteria="answers the question", feedback_key="helpful")
    assert missing.value.code == "MODEL_NOT_FOUND"
    with pytest.raises(gradebox.NotFoundError) as rubric:
        client.graders.create.rubric_judge(
            new_key("rubric"), judge_model="not-registered", criteria=[{"name": "correct", "requirement": "is right"}], partial_credit=0.5
        )
    assert rubric.value.code == "MODEL_NOT_FOUND"
    # an endpoint's: the definition is accepted and the server checks the address (nothing listens there)
    with pytest.raises(gradebox.GraderValidationError) as unreachable:
        client.graders.create.external_endpoint(new_key("endpoint"), url="http://127.0.0.1:9/reward", timeout_ms=1000, max_concurrency=2)
    assert "cannot reach the endpoint" in unreachable.value.message
    with pytest.raises(gradebox.BadRequestError) as bad:
        client.graders.create.external_endpoint(new_key("endpoint"), url="http://127.0.0.1:9/reward", timeout_ms=5)
    assert bad.value.code == "INVALID_REQUEST" and "timeoutMs" in bad.value.message


def test_create_code_async(new_key: Callable[[str], str]) -> None:
    import asyncio

    key = new_key("acode")

    async def main() -> None:
        async with gradebox.AsyncGradebox() as c:
            made = await c.graders.create.code(key, scoring="all_or_nothing")
            assert (made["kind"], made["code"]["scoring"]) == ("code", "all_or_nothing")

    asyncio.run(main())


SHAPES = [
    {"turns": [{"role": "user", "content": "plain"}]},
    {"turns": [{"role": "assistant", "content": ""}], "metadata": {}},
    {"turns": [{"role": "developer", "content": "a role outside ROLES"}, {"role": "assistant", "content": "ok"}], "metadata": {"n": [1, {"x": None}]}},
    {"turns": [{"role": "system", "content": "é ß 日本 🎉 mixed\nlines\n\nand \"quotes\""}, {"role": "tool", "content": "\u0000\u001f"}]},
    {"turns": [{"role": "critic", "content": "🎉" * 50}, {"role": "developer", "content": "x" * 3000}], "metadata": {"deep": {"a": [1, 2, {"c": "d"}]}}},
]


def test_grade_batch_goes_packed_and_the_server_sees_every_thread_as_sent(client: Gradebox, graders: dict[str, str]) -> None:
    from gradebox._packed import PACKED_BATCH_TYPE, PackedThreads, unpack_body
    from gradebox.client import _dumps

    packed = PackedThreads.pack(SHAPES, _dumps)
    assert packed is not None
    body = packed.body(range(len(SHAPES)), b"{}")
    assert unpack_body(body) == {"threads": SHAPES}  # the client's own reading of what it sends
    # as the server reads it: each thread's turns and metadata back from the echo grader
    batch = client.graders.grade_batch(graders["echo"], SHAPES)
    for sent, result in zip(SHAPES, batch["results"]):
        assert result["metadata"]["turns"] == [[t["role"], t["content"]] for t in sent["turns"]], result
        assert result["metadata"]["metadata"] == sent.get("metadata", {})
    # the same as JSON
    as_json, _ = client._request("POST", f"/v1/projects/{client.project}/graders/{graders['echo']}/grade-batch", body={"threads": SHAPES}, retry=True)
    assert [r["metadata"] for r in as_json["results"]] == [r["metadata"] for r in batch["results"]]
    # a packed body the server refuses: its error names what is wrong, as JSON's refusal does
    with pytest.raises(gradebox.BadRequestError) as info:
        client._request(
            "POST",
            f"/v1/projects/{client.project}/graders/{graders['echo']}/grade-batch",
            raw_body=b"{}\n[[1,0,9],[null]]\nshort",
            packed=True,
            retry=False,
        )
    assert info.value.code == "INVALID_REQUEST"
    assert "add up to 9 characters, but the contents hold 5" in info.value.message
    assert PACKED_BATCH_TYPE == "application/vnd.gradebox.batch"


def test_a_split_batch_whose_parts_use_different_other_roles(client: Gradebox, graders: dict[str, str], max_batch: int) -> None:
    # each request lists only the roles its own turns use: one part has developer, another critic, one neither
    roles = ["developer"] * max_batch + ["user"] * max_batch + ["critic"] * max_batch
    threads = [{"turns": [{"role": role, "content": f"c{i}"}]} for i, role in enumerate(roles)]
    batch = client.graders.grade_batch(graders["echo"], threads)
    assert [r["metadata"]["turns"] for r in batch["results"]] == [[[role, f"c{i}"]] for i, role in enumerate(roles)]


def test_a_thread_the_client_cannot_pack_goes_as_json_and_the_server_words_its_error(client: Gradebox, graders: dict[str, str]) -> None:
    with pytest.raises(gradebox.BadRequestError) as info:
        client.graders.grade_batch(graders["echo"], [{"turns": [{"role": "user", "content": 5}]}])
    assert info.value.code == "INVALID_REQUEST"
    assert "content" in info.value.message
