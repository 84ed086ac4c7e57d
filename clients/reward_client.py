#!/usr/bin/env python3
"""A minimal client for the reward-server protocol (Python 3.11, standard library only).

It speaks the protocol and nothing else, so it works against any reward server: pass the
root the four endpoints live under, either

  * a Gradebox grader:    http://host:8787/v1/projects/{project}/graders/{key}/reward
  * a plain reward server: http://host:port

The protocol:

  GET  {root}/info             -> {"version", "name", "description"}
  GET  {root}/metadata_schema  -> a JSON Schema object
  POST {root}/score            {"turns": [{"role", "content"}], "metadata"?, "id"?}
                               -> {"reward", "metadata", "id"?}
  POST {root}/batch_score      {"requests": [...]} -> {"responses": [...]}, in request order

`api_key`, when given, is sent as `Authorization: Bearer <key>` (Gradebox needs it). A non-2xx
answer raises RewardServerError with the status and, when the body is problem+json, its `code`
and `detail` (the whole body is kept in `.problem`, e.g. `index` for a failing batch item).

Command line (prints the JSON answer to stdout; on an error, the error as JSON to stderr, exit 1):

  python3 reward_client.py ROOT [--api-key K] info
  python3 reward_client.py ROOT [--api-key K] metadata_schema
  python3 reward_client.py ROOT [--api-key K] score REQUEST.json     # {"turns", "metadata"?, "id"?}
  python3 reward_client.py ROOT [--api-key K] batch_score BATCH.json # {"requests": [...]} or [...]

FILE may be "-" for stdin. The key defaults to $REWARD_API_KEY.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import urllib.error
import urllib.request
from typing import Any

__all__ = ["RewardClient", "RewardServerError"]

Turn = dict[str, str]
Request = dict[str, Any]


class RewardServerError(Exception):
    """A non-2xx answer: `status`, and `code`/`detail` from a problem+json body when there is one."""

    def __init__(self, status: int, code: str | None, detail: str, problem: dict[str, Any] | None = None):
        super().__init__(f"{status} {code or 'error'}: {detail}")
        self.status = status
        self.code = code
        self.detail = detail
        self.problem = problem or {}

    def to_dict(self) -> dict[str, Any]:
        return {"status": self.status, "code": self.code, "detail": self.detail, "problem": self.problem}


class RewardClient:
    """The four endpoints of one reward server, under `base_url`."""

    def __init__(self, base_url: str, api_key: str | None = None, timeout: float = 30):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout

    def info(self) -> dict[str, Any]:
        """{"version", "name", "description"}"""
        return self._request("GET", "/info")

    def metadata_schema(self) -> dict[str, Any]:
        """The JSON Schema of the metadata the server reads."""
        return self._request("GET", "/metadata_schema")

    def score(self, turns: list[Turn], metadata: dict[str, Any] | None = None, id: str | int | None = None) -> dict[str, Any]:
        """{"reward", "metadata", "id"?} for one thread."""
        return self._request("POST", "/score", _score_request(turns, metadata, id))

    def batch_score(self, requests: list[Request]) -> list[dict[str, Any]]:
        """The responses to `requests` (each {"turns", "metadata"?, "id"?}, sent as given), in the same order."""
        responses = self._request("POST", "/batch_score", {"requests": list(requests)})["responses"]
        if len(responses) != len(requests):
            raise RewardServerError(200, "BAD_RESPONSE", f"{len(requests)} requests, {len(responses)} responses")
        return responses

    def _request(self, method: str, path: str, body: Any = None) -> Any:
        headers = {"accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["content-type"] = "application/json"
        if self.api_key:
            headers["authorization"] = f"Bearer {self.api_key}"
        req = urllib.request.Request(self.base_url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as res:
                return json.loads(res.read() or b"null")
        except urllib.error.HTTPError as err:
            raise _error(err.code, err.read()) from None


def _score_request(turns: list[Turn], metadata: dict[str, Any] | None, id: str | int | None) -> Request:
    request: Request = {"turns": turns}
    if metadata is not None:
        request["metadata"] = metadata
    if id is not None:
        request["id"] = id
    return request


def _error(status: int, raw: bytes) -> RewardServerError:
    text = raw.decode("utf-8", "replace")
    try:
        problem = json.loads(text)
    except ValueError:
        problem = None
    if isinstance(problem, dict):
        detail = problem.get("detail") or problem.get("title") or problem.get("message") or text
        return RewardServerError(status, problem.get("code"), str(detail), problem)
    return RewardServerError(status, None, text.strip() or f"HTTP {status}")


def _read_json(path: str) -> Any:
    if path == "-":
        return json.load(sys.stdin)
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Call a reward server (info, metadata_schema, score, batch_score).")
    parser.add_argument("base_url", help="the reward server's root, e.g. …/graders/{key}/reward")
    parser.add_argument("--api-key", default=os.environ.get("REWARD_API_KEY"), help="sent as a bearer token")
    parser.add_argument("--timeout", type=float, default=30, help="seconds per request (default 30)")
    parser.add_argument("command", choices=["info", "metadata_schema", "score", "batch_score"])
    parser.add_argument("file", nargs="?", help="the request as JSON (score, batch_score); - for stdin")
    args = parser.parse_args(argv)

    payload: Any = None
    if args.command in ("score", "batch_score"):
        if args.file is None:
            parser.error(f"{args.command} needs a FILE")
        try:
            payload = _read_json(args.file)
        except (OSError, ValueError) as err:
            parser.error(f"cannot read {args.file}: {err}")
        if args.command == "score" and not (isinstance(payload, dict) and "turns" in payload):
            parser.error("score: FILE must hold {\"turns\": [...], \"metadata\"?, \"id\"?}")
        if args.command == "batch_score":
            payload = payload.get("requests") if isinstance(payload, dict) else payload
            if not isinstance(payload, list):
                parser.error("batch_score: FILE must hold {\"requests\": [...]} or a list of requests")

    client = RewardClient(args.base_url, api_key=args.api_key, timeout=args.timeout)
    try:
        if args.command == "info":
            out = client.info()
        elif args.command == "metadata_schema":
            out = client.metadata_schema()
        elif args.command == "score":
            out = client.score(payload["turns"], payload.get("metadata"), payload.get("id"))
        else:
            out = {"responses": client.batch_score(payload)}
    except RewardServerError as err:
        print(json.dumps({"error": err.to_dict()}), file=sys.stderr)
        return 1
    except OSError as err:  # urllib's URLError is one
        print(json.dumps({"error": {"status": 0, "code": "CONNECTION_ERROR", "detail": str(err)}}), file=sys.stderr)
        return 1
    except (ValueError, KeyError, TypeError) as err:  # a 2xx answer that is not the protocol's JSON
        print(json.dumps({"error": {"status": 0, "code": "BAD_RESPONSE", "detail": str(err)[:500]}}), file=sys.stderr)
        return 1
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
