"""Adaptive's reward protocol, both directions, with Adaptive's own server and client (their wire
copies: test/support/adaptive_server.py, adaptive_client.py) against the server GRADEBOX_URL
names (test/support/trainers.sh starts one, with loopback egress allowed):
(a) the stock reward server registered as an endpoint grader grades threads through Gradebox,
    over HTTP (its "id": null answers) and over its WebSocket (transport "websocket": integer
    ids, chunked answers), a developer role passed on;
(b) the stock RewardClient, given the grade token's one URL (urls.adaptive) and no header,
    scores that grader over HTTP (info, metadata_schema, score, batch_score) and over its
    WebSocket (score), so each request goes client → Gradebox → stock server and back.
Exits non-zero on the first difference."""

from __future__ import annotations

import asyncio
import os
import socket
import sys
import time
import uuid

import httpx
from adaptive_client import Request, RewardClient, Turn
from adaptive_server import ExpectedServer

import gradebox


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def api(method: str, path: str, body: object | None = None) -> dict:
    url, key = os.environ["GRADEBOX_URL"], os.environ["GRADEBOX_API_KEY"]
    res = httpx.request(method, f"{url}{path}", json=body, headers={"authorization": f"Bearer {key}"}, timeout=30)
    if res.status_code >= 300:
        raise SystemExit(f"{method} {path}: {res.status_code} {res.text}")
    return res.json() if res.content else {}


def thread(last: str, expected: str, first_role: str = "user") -> dict:
    return {"turns": [{"role": first_role, "content": "Name a prime."}, {"role": "assistant", "content": last}], "metadata": {"expected": expected}}


def check(what: str, got: object, want: object) -> None:
    if got != want:
        raise SystemExit(f"adaptive: {what}: got {got!r}, want {want!r}")
    print(f"adaptive: ok: {what}", file=sys.stderr)


def endpoint_grader(project: str, port: int, transport: str) -> str:
    """(a): the stock server as an endpoint grader over `transport`, graded one by one and as a batch."""
    key = f"adaptive-{transport}-{uuid.uuid4().hex[:6]}"
    body = {"key": key, "url": f"http://127.0.0.1:{port}", "transport": transport}
    made = api("POST", f"/v1/projects/{project}/graders/external-endpoint", body)
    check(f"{transport}: registration read the stock /info", made["endpoint"]["info"]["name"], "expected")
    check(f"{transport}: registration read the stock /metadata_schema", made["endpoint"]["metadataSchema"]["required"], ["expected"])
    check(f"{transport}: the grader's transport", made["endpoint"]["transport"], transport)
    client = gradebox.Gradebox()
    one = client.graders.grade(key, thread("7", "7", first_role="developer"))
    check(f"{transport}: /grade through the stock server (a developer role)", (one["score"], one["metadata"]["roles"]), (1.0, ["developer", "assistant"]))
    # over HTTP the stock server answers "id": null; over its socket, the integer id it was sent
    threads = [thread(str(n % 10), "7", first_role="developer" if n % 2 else "user") for n in range(5, 25)]
    batch = client.graders.grade_batch(key, threads)
    check(f"{transport}: grade_batch through the stock server", batch.scores(), [1.0 if n % 10 == 7 else 0.0 for n in range(5, 25)])
    check(
        f"{transport}: each thread's roles reached the stock server",
        [r.metadata["roles"][0] for r in batch.results],
        ["developer" if n % 2 else "user" for n in range(5, 25)],
    )
    return key


async def stock_client(project: str, key: str) -> None:
    """(b): the stock RewardClient at the grade token's URL, over HTTP then its WebSocket."""
    token = api("POST", f"/v1/projects/{project}/graders/{key}/tokens", {"label": "adaptive round trip"})
    url = token["urls"]["adaptive"]
    client = RewardClient(url)
    info = await client.info()
    check("RewardClient.info", (info.name, info.version), (key, "1"))
    check("RewardClient.validate_metadata (the endpoint's schema)", (await client.validate_metadata({"expected": "7"})).is_valid, True)
    check("RewardClient.validate_metadata refuses", (await client.validate_metadata({})).is_valid, False)
    turns = [Turn(role="developer", content="Name a prime."), Turn(role="assistant", content="7")]
    scored = await client.score(Request(turns=turns, metadata={"expected": "7"}))
    check("RewardClient.score over HTTP (id None)", (scored.reward, scored.id, scored.metadata["roles"]), (1.0, None, ["developer", "assistant"]))
    requests = [Request(turns=[Turn(role="user", content="q"), Turn(role="assistant", content=str(n))], metadata={"expected": "7"}, id=n) for n in range(5, 10)]
    responses = await client.batch_score(requests)
    check("RewardClient.batch_score over HTTP", [(r.reward, r.id) for r in responses], [(0.0, 5), (0.0, 6), (1.0, 7), (0.0, 8), (0.0, 9)])

    await client.connect_websocket()
    many = [Request(turns=[Turn(role="user", content="q"), Turn(role="assistant", content=str(n % 10))], metadata={"expected": "7"}) for n in range(40)]
    got = await asyncio.wait_for(asyncio.gather(*(client.score(r) for r in many)), timeout=120)
    check("RewardClient.score over its WebSocket (ids 0..39, chunked answers)", [r.reward for r in got], [1.0 if n % 10 == 7 else 0.0 for n in range(40)])
    check("each WebSocket answer carries its request's id", sorted(r.id for r in got), list(range(40)))
    await client.drop_websocket()

    api("DELETE", f"/v1/projects/{project}/graders/{key}/tokens/{token['id']}")
    try:
        await RewardClient(url).info()
        raise SystemExit("adaptive: a revoked token still answered")
    except httpx.HTTPStatusError as e:
        check("a revoked token", e.response.status_code, 401)


def main() -> int:
    project = os.environ["GRADEBOX_PROJECT"]
    port = free_port()
    server = ExpectedServer(port)
    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/info", timeout=2)
            break
        except httpx.TransportError:
            time.sleep(0.1)
    try:
        key = endpoint_grader(project, port, "http")
        endpoint_grader(project, port, "websocket")
        asyncio.run(stock_client(project, key))
    finally:
        server.server.stop()
    print("adaptive: PASSED: the stock server as an endpoint grader, the stock client at a grade token's URL", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
