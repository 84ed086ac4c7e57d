"""The package itself, its configuration, error mapping, retries and transport failures (the
last against a scripted stand-in server: a real one will not answer 503 on demand)."""

from __future__ import annotations

import importlib.metadata
import json
import socket
import sys
import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from pathlib import Path

import pytest
from conftest import Reply, Stub, batch_body

import gradebox
from gradebox import Gradebox
from gradebox.client import _backoff, _retry_after
from gradebox.errors import error_from_response


def test_the_installed_package_is_imported_not_the_source_tree() -> None:
    source_tree = (Path(__file__).resolve().parents[1] / "src").resolve()
    module = Path(gradebox.__file__).resolve()
    assert not module.is_relative_to(source_tree), f"gradebox imported from the source tree: {module}"
    assert "site-packages" in module.parts, module
    assert module.is_relative_to(Path(sys.prefix).resolve()), (module, sys.prefix)
    assert (module.parent / "py.typed").is_file(), "py.typed is not installed"
    assert importlib.metadata.version("gradebox") == gradebox.__version__


def test_defaults_come_from_the_environment_and_arguments_win(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GRADEBOX_URL", "http://example.test:9000/")
    monkeypatch.setenv("GRADEBOX_PROJECT", "envproj")
    monkeypatch.setenv("GRADEBOX_API_KEY", "envkey")
    c = Gradebox()
    assert (c.base_url, c.project, c._api_key, c.timeout, c.max_retries) == ("http://example.test:9000", "envproj", "envkey", 60.0, 2)
    c = Gradebox("http://other:1", project="p", api_key="k", timeout=5, max_retries=0)
    assert (c.base_url, c.project, c._api_key, c.timeout, c.max_retries) == ("http://other:1", "p", "k", 5.0, 0)
    for name in ("GRADEBOX_URL", "GRADEBOX_PROJECT", "GRADEBOX_API_KEY"):
        monkeypatch.delenv(name)
    c = Gradebox()
    assert (c.base_url, c.project, c._api_key) == ("http://127.0.0.1:8787", "default", None)


def test_errors_map_like_the_typescript_sdk() -> None:
    cases = [
        (400, "INVALID_REQUEST", gradebox.BadRequestError),
        (401, "UNAUTHORIZED", gradebox.AuthenticationError),
        (403, "FORBIDDEN", gradebox.PermissionDeniedError),
        (404, "GRADER_NOT_FOUND", gradebox.NotFoundError),
        (409, "GRADER_LOCKED", gradebox.ConflictError),
        (413, "BATCH_TOO_LARGE", gradebox.PayloadTooLargeError),
        (422, "INVALID_COMPONENT", gradebox.UnprocessableEntityError),
        (429, "VALIDATION_RATE_LIMITED", gradebox.RateLimitError),
        (500, "INTERNAL", gradebox.InternalServerError),
        (503, "SANDBOX_UNAVAILABLE", gradebox.InternalServerError),
        (423, "GRADER_QUARANTINED", gradebox.APIError),
        (422, "VALIDATION_FAILED", gradebox.GraderValidationError),
        (422, "GRADER_TIMEOUT", gradebox.GraderRuntimeError),
        (502, "JUDGE_UNAVAILABLE", gradebox.GraderRuntimeError),
    ]
    for status, code, cls in cases:
        error = error_from_response(status, {"code": code, "detail": "why"}, "rid")
        assert type(error) is cls, (status, code, type(error))
        assert (error.status, error.code, error.request_id, str(error)) == (status, code, "rid", f"{status} {code}: why")
    assert isinstance(error_from_response(422, {"code": "GRADER_ERROR"}, None), gradebox.UnprocessableEntityError)
    bare = error_from_response(502, {"title": "Bad gateway"}, None)
    assert (type(bare), bare.code, str(bare)) == (gradebox.InternalServerError, "HTTP_502", "502 HTTP_502: Bad gateway")


def test_backoff_has_jitter_and_retry_after_takes_seconds_or_a_date() -> None:
    waits = [_backoff(0) for _ in range(200)]
    assert 0.375 <= min(waits) < max(waits) <= 0.625
    assert all(6.0 <= _backoff(9) <= 10.0 for _ in range(50))  # capped at 8 s, ±25 %
    assert _retry_after("2") == 2.0
    assert _retry_after("0.5") == 0.5
    assert _retry_after("600") == 60.0
    assert _retry_after("-3") == 0.0
    assert _retry_after("soon") is None
    assert _retry_after(None) is None
    date = format_datetime(datetime.now(timezone.utc) + timedelta(seconds=10), usegmt=True)
    wait = _retry_after(date)
    assert wait is not None and 8.0 <= wait <= 10.0


def test_a_retryable_status_is_retried_honouring_retry_after(stub: Stub) -> None:
    stub.replies = [
        Reply(503, {"code": "SANDBOX_UNAVAILABLE"}, {"retry-after": "1"}),
        Reply(200, {"data": [], "nextCursor": None}),
    ]
    c = Gradebox(stub.url, project="p", api_key="k1")
    assert c.graders.list() == []
    assert [s.method for s in stub.seen] == ["GET", "GET"]
    assert stub.seen[1].at - stub.seen[0].at >= 0.95, "retry-after: 1 was not honoured"
    assert all(s.headers["authorization"] == "Bearer k1" for s in stub.seen)
    assert stub.seen[0].path == "/v1/projects/p/graders?limit=200"


def test_retries_stop_after_max_retries(stub: Stub) -> None:
    stub.replies = [Reply(502, {"code": "X"}, {"retry-after": "0", "x-request-id": f"r{i}"}) for i in range(5)]
    c = Gradebox(stub.url, api_key="k", max_retries=2)
    with pytest.raises(gradebox.InternalServerError) as info:
        c.graders.grade("g", {"turns": [{"role": "user", "content": "x"}]})
    assert len(stub.seen) == 3
    assert (info.value.status, info.value.code, info.value.request_id) == (502, "X", "r2")


def test_upstream_502s_are_not_retried(stub: Stub) -> None:
    # the server retried the judge's model (or the endpoint) itself before answering: repeating
    # the call would multiply its attempts and open its circuit breaker on a user's first call
    for code in ("JUDGE_UNAVAILABLE", "ENDPOINT_UNAVAILABLE"):
        stub.seen.clear()
        stub.replies = [Reply(502, {"code": code}, {"retry-after": "0"}), Reply(200, {"score": 1})]
        c = Gradebox(stub.url, api_key="k", max_retries=2)
        with pytest.raises(gradebox.GraderRuntimeError) as info:
            c.graders.grade("g", {"turns": [{"role": "user", "content": "x"}]})
        assert (info.value.code, len(stub.seen)) == (code, 1)


def test_creates_are_not_retried_and_4xx_never(stub: Stub) -> None:
    stub.replies = [Reply(503, {"code": "SANDBOX_UNAVAILABLE"}, {"retry-after": "0"}), Reply(201, {"key": "never"})]
    c = Gradebox(stub.url, api_key="k", max_retries=2)
    with pytest.raises(gradebox.InternalServerError):
        c.graders.create_function("g", source="export async function grade(t) { return 1; }")
    assert len(stub.seen) == 1
    assert json.loads(stub.seen[0].body) == {"key": "g", "source": "export async function grade(t) { return 1; }", "description": ""}

    stub.replies = [Reply(409, {"code": "GRADER_LOCKED", "detail": "locked"}), Reply(204)]
    with pytest.raises(gradebox.ConflictError):
        c.graders.delete("g")
    assert len(stub.seen) == 2


def test_connections_are_kept_alive_and_a_dropped_one_is_replaced(stub: Stub) -> None:
    c = Gradebox(stub.url, api_key="k", max_retries=0)
    for key in ("a", "b", "c"):
        c.graders.get(key)
    assert len({s.port for s in stub.seen}) == 1, "one keep-alive connection"

    stub.seen.clear()
    stub.replies = [Reply(200, {"key": "d"}, drop=True), Reply(200, {"key": "e"}, drop=True), Reply(201, {"key": "f"})]
    assert c.graders.get("d")["key"] == "d"
    assert c.graders.get("e")["key"] == "e"  # sent on the dropped connection, then once more on a new one
    assert c.graders.create_function("f", source="x")["key"] == "f"  # a create always gets a new connection
    assert [s.path.rsplit("/", 1)[-1] for s in stub.seen] == ["d", "e", "graders"]
    assert len({s.port for s in stub.seen}) == 3


def test_a_refused_connection_is_an_api_connection_error() -> None:
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    c = Gradebox(f"http://127.0.0.1:{port}", api_key="k", max_retries=0)
    with pytest.raises(gradebox.APIConnectionError) as info:
        c.graders.get("g")
    assert not isinstance(info.value, gradebox.APITimeoutError)
    assert f"127.0.0.1:{port}" in str(info.value)


def test_a_stalled_answer_is_an_api_timeout_error(stub: Stub) -> None:
    stub.replies = [Reply(200, {}, delay=1.0)]
    c = Gradebox(stub.url, api_key="k", timeout=0.2, max_retries=0)
    started = time.monotonic()
    with pytest.raises(gradebox.APITimeoutError):
        c.graders.get("g")
    assert time.monotonic() - started < 0.9


def test_an_answer_over_the_cap_is_refused_and_its_connection_dropped(stub: Stub, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gradebox._transport, "MAX_RESPONSE_BYTES", 100)
    stub.replies = [Reply(200, {"key": "x" * 200}), Reply(200, {"key": "small"})]
    c = Gradebox(stub.url, api_key="k", max_retries=0)
    with pytest.raises(gradebox.APIError) as info:
        c.graders.get("g")
    assert (info.value.code, info.value.status) == ("RESPONSE_TOO_LARGE", 200)
    assert c.graders.get("g")["key"] == "small"
    assert len({s.port for s in stub.seen}) == 2, "the half-read connection was not reused"


def test_a_batch_answer_without_one_result_per_thread_is_refused(stub: Stub) -> None:
    stub.replies = [
        Reply(200, {"maxBatchThreads": 1000, "maxBodyBytes": 1_000_000}),
        Reply(200, {"results": [{"score": 1}], "durationMs": 1, "version": 1}),
    ]
    c = Gradebox(stub.url, api_key="k", max_retries=0)
    threads = [{"turns": [{"role": "assistant", "content": "a"}]}, {"turns": [{"role": "assistant", "content": "b"}]}]
    with pytest.raises(gradebox.APIError) as info:
        c.graders.grade_batch("g", threads)
    assert info.value.code == "INVALID_RESPONSE"
    assert "1 results for 2 threads" in str(info.value)


def test_chunks_after_the_first_are_pinned_to_the_version_that_graded_it(stub: Stub) -> None:
    stub.replies = [
        Reply(200, {"maxBatchThreads": 1, "maxBodyBytes": 1_000_000}),
        *[Reply(200, {"results": [{"score": i}], "durationMs": 1, "version": 7}) for i in range(3)],
    ]
    c = Gradebox(stub.url, api_key="k", max_retries=0)
    threads = [{"turns": [{"role": "assistant", "content": str(i)}]} for i in range(3)]
    assert c.graders.grade_batch("g", threads)["version"] == 7
    bodies = [batch_body(s) for s in stub.seen if s.path.endswith("/grade-batch")]
    assert [b.get("version") for b in bodies] == [None, 7, 7]


def test_a_safe_request_is_retried_after_a_time_out(stub: Stub) -> None:
    stub.replies = [Reply(200, {"key": "late"}, delay=1.0), Reply(200, {"key": "g"})]
    c = Gradebox(stub.url, api_key="k", timeout=0.2, max_retries=1)
    assert c.graders.get("g")["key"] == "g"
    assert len(stub.seen) == 2


def test_an_older_servers_415_for_a_packed_batch_is_answered_with_json(stub: Stub) -> None:
    stub.replies = [
        Reply(200, {"maxBatchThreads": 100, "maxBodyBytes": 1_000_000}),
        Reply(415, {"code": "UNSUPPORTED_MEDIA_TYPE", "detail": "Unsupported Media Type"}),
        Reply(200, {"results": [{"score": 1}], "durationMs": 1, "version": 1}),
        Reply(200, {"results": [{"score": 1}], "durationMs": 1, "version": 1}),
    ]
    c = Gradebox(stub.url, api_key="k", max_retries=0)
    threads = [{"turns": [{"role": "assistant", "content": "é🎉"}], "metadata": {"i": 1}}]
    assert c.graders.grade_batch("g", threads)["results"][0]["score"] == 1
    assert c.graders.grade_batch("g", threads)["results"][0]["score"] == 1
    sent = [s for s in stub.seen if s.path.endswith("/grade-batch")]
    assert [s.headers["content-type"] for s in sent] == ["application/vnd.gradebox.batch", "application/json", "application/json"]
    assert [batch_body(s) for s in sent] == [{"threads": threads}] * 3
