"""Fixtures: a client of the real server named by GRADEBOX_URL / GRADEBOX_API_KEY /
GRADEBOX_PROJECT (test/python-client.test.ts starts one with GRADEBOX_MAX_BATCH=5 and sets
GRADEBOX_TEST_MAX_BATCH=5), graders under fresh keys removed at the end, and a scripted
stand-in HTTP server for what a real one will not do on demand (503s, retry-after, stalls)."""

from __future__ import annotations

import json
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, cast

import pytest

import gradebox
from gradebox import Gradebox
from gradebox._packed import PACKED_BATCH_TYPE, unpack_body

# scores metadata.i; throws when metadata.boom is set
INDEXER = """export async function grade(thread) {
  if (thread.metadata.boom) throw new Error("boom at " + thread.metadata.i);
  return Number(thread.metadata.i ?? 0);
}"""
# 1 when the completion is metadata.expected
EXACT = """export async function grade(thread) {
  return (thread.completion() ?? "").trim() === String(thread.metadata.expected ?? "").trim() ? 1 : 0;
}"""
# 1 when the completion is metadata.answer, plus a hundredth per turn
TURNS = """export default async function grade(thread) {
  const ok = (thread.completion() ?? "").trim() === String(thread.metadata.answer ?? "");
  return (ok ? 1 : 0) + thread.getTurns().length / 100;
}"""
# the turns and metadata the server received
ECHO = """export default async function grade(thread) {
  return { score: thread.getTurns().length, metadata: { turns: thread.getTurns(), metadata: thread.metadata } };
}"""


def _required_env(name: str) -> str:
    value = os.environ.get(name)
    if not value:
        pytest.exit(f"{name} is not set: these tests run against a real Gradebox server (see test/python-client.test.ts)", 2)
    return value


@pytest.fixture(scope="session")
def client() -> Iterator[Gradebox]:
    for name in ("GRADEBOX_URL", "GRADEBOX_API_KEY", "GRADEBOX_PROJECT"):
        _required_env(name)
    with Gradebox() as c:
        yield c


@pytest.fixture(scope="session")
def max_batch() -> int:
    return int(_required_env("GRADEBOX_TEST_MAX_BATCH"))


@pytest.fixture(scope="session")
def new_key(client: Gradebox) -> Iterator[Callable[[str], str]]:
    """A fresh grader key; every grader made under one is unlocked and deleted at the end."""
    made: list[str] = []

    def make(prefix: str) -> str:
        key = f"{prefix}-{uuid.uuid4().hex[:8]}"
        made.append(key)
        return key

    yield make
    # the newest first: a combined grader goes before the parts it uses
    for key in reversed(made):
        try:
            client.graders.lock(key, False)
            client.graders.delete(key)
        except gradebox.NotFoundError:
            pass


@pytest.fixture(scope="session")
def graders(client: Gradebox, new_key: Callable[[str], str]) -> dict[str, str]:
    """The shared graders, by role: their keys."""
    keys = {}
    for role, source in (("indexer", INDEXER), ("exact", EXACT), ("turns", TURNS), ("echo", ECHO)):
        keys[role] = new_key(role)
        client.graders.create_function(keys[role], source=source)
    return keys


def thread(completion: str, **metadata: Any) -> dict[str, Any]:
    return {
        "turns": [{"role": "user", "content": "question"}, {"role": "assistant", "content": completion}],
        "metadata": metadata,
    }


@dataclass
class Reply:
    status: int = 200
    body: Any = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    #: close the connection after answering, without saying so (as a keep-alive timeout does)
    drop: bool = False


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes
    at: float
    #: the client's port: one per connection
    port: int


def batch_body(seen: Seen) -> dict[str, Any]:
    """A grade-batch request's body as JSON, whether the client sent it packed or as JSON."""
    if seen.headers.get("content-type") == PACKED_BATCH_TYPE:
        return unpack_body(seen.body)
    return cast("dict[str, Any]", json.loads(seen.body))


class Stub:
    """An HTTP server answering with `replies` in turn (then 200 {}), recording each request."""

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.seen: list[Seen] = []
        stub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def handle_one(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                stub.seen.append(Seen(self.command, self.path, headers, body, time.monotonic(), self.client_address[1]))
                reply = stub.replies.pop(0) if stub.replies else Reply()
                time.sleep(reply.delay)
                data = json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    kind = "application/problem+json" if reply.status >= 400 else "application/json"
                    self.send_header("content-type", kind)
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                    self.close_connection = reply.drop
                except OSError:
                    pass  # the client gave up (a timeout test)

            do_GET = do_POST = do_PUT = do_DELETE = handle_one

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Stub]:
    s = Stub()
    yield s
    s.close()
