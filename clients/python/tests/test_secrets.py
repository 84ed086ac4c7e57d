"""client.secrets against the real server (test/python-client.test.ts lets it reach 127.0.0.1, so
a model there can name a secret), and a 503 SECRETS_NOT_CONFIGURED from the scripted stand-in
(a server with a SQLite database always has a secrets key)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator

import pytest
from conftest import Reply, Stub

import gradebox
from gradebox import Gradebox


@pytest.fixture
def new_name(client: Gradebox) -> Iterator[Callable[[str], str]]:
    """A fresh secret name; every secret made under one is deleted at the end."""
    made: list[str] = []

    def make(prefix: str) -> str:
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        made.append(name)
        return name

    yield make
    for name in made:
        try:
            client.secrets.delete(name)
        except gradebox.NotFoundError:
            pass


def test_set_rotate_list_get_delete_never_show_the_value(client: Gradebox, new_name: Callable[[str], str]) -> None:
    name = new_name("py.key")
    created = client.secrets.set(name, "sk-python-first")
    assert sorted(created) == ["createdAt", "host", "name", "updatedAt"]
    assert (created["name"], created["host"]) == (name, None)
    rotated = client.secrets.set(name, "sk-python-second")
    assert rotated["createdAt"] == created["createdAt"]
    assert rotated["updatedAt"] >= created["updatedAt"]

    other = new_name("other")
    client.secrets.set(other, "v")
    listed = client.secrets.list()
    names = [s["name"] for s in listed]
    assert {name, other} <= set(names) and names == sorted(names)
    assert client.secrets.get(name) == rotated
    assert "sk-python" not in json.dumps(listed)

    client.secrets.delete(other)
    with pytest.raises(gradebox.NotFoundError) as missing:
        client.secrets.get(other)
    assert (missing.value.status, missing.value.code) == (404, "SECRET_NOT_FOUND")
    assert other not in [s["name"] for s in client.secrets.list()]


def test_a_value_the_server_refuses_is_a_bad_request_and_nothing_is_stored(client: Gradebox, new_name: Callable[[str], str]) -> None:
    name = new_name("refused")
    for value in ("", "two\nlines", "x" * 8193):
        with pytest.raises(gradebox.BadRequestError) as info:
            client.secrets.set(name, value)
        assert info.value.code == "INVALID_REQUEST"
    with pytest.raises(TypeError, match="str"):
        client.secrets.set(name, b"bytes")  # type: ignore[arg-type]
    with pytest.raises(gradebox.NotFoundError):
        client.secrets.get(name)


def test_a_secret_a_model_uses_is_bound_to_its_host_and_cannot_be_deleted(client: Gradebox, new_name: Callable[[str], str]) -> None:
    name = new_name("judge")
    client.secrets.set(name, "sk-judge")
    models = f"/v1/projects/{client.project}/models"
    model_key = f"m-{uuid.uuid4().hex[:8]}"
    # registering calls no model: nothing needs to listen there
    body = {"key": model_key, "baseURL": "http://127.0.0.1:9/v1", "model": "judge-1", "apiKeySecret": name}
    model, _ = client._request("POST", models, body=body, retry=False)
    try:
        assert model["apiKeySecret"] == name
        assert client.secrets.get(name)["host"] == "127.0.0.1"
        with pytest.raises(gradebox.ConflictError) as info:
            client.secrets.delete(name)
        assert info.value.code == "SECRET_IN_USE"
        assert info.value.body["usedBy"] == [f'model "{model_key}"']
    finally:
        client._request("DELETE", f"{models}/{model_key}", retry=True)
    client.secrets.delete(name)


def test_secrets_not_configured_is_not_retried(stub: Stub) -> None:
    detail = "this server has no secrets key: its operator must set GRADEBOX_SECRETS_KEY"
    stub.replies = [Reply(503, {"code": "SECRETS_NOT_CONFIGURED", "detail": detail}, {"retry-after": "0"}), Reply(200, {})]
    c = Gradebox(stub.url, project="p", api_key="k", max_retries=2)
    with pytest.raises(gradebox.InternalServerError) as info:
        c.secrets.set("a/b", "v")
    assert (info.value.status, info.value.code) == (503, "SECRETS_NOT_CONFIGURED")
    assert "GRADEBOX_SECRETS_KEY" in info.value.message
    assert len(stub.seen) == 1, "asked once"
    assert (stub.seen[0].method, stub.seen[0].path) == ("PUT", "/v1/projects/p/secrets/a%2Fb")
    assert json.loads(stub.seen[0].body) == {"value": "v"}
