"""AsyncGradebox: the client for asyncio code (TRL's async reward functions run on an event loop,
verl's reward loop and verifiers' scoring too). The same calls as Gradebox, awaited; the requests,
retries, errors and grade_batch's chunking are Gradebox's own (client._Call, client._BatchPlan),
only the I/O differs (gradebox._async_transport)."""

from __future__ import annotations

import asyncio
import builtins
import os
import urllib.parse
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from ._async_transport import AsyncTransport
from ._transport import ResponseTooLarge, StaleConnection
from .client import (
    OnUnavailable,
    _BatchPlan,
    _Call,
    _Chunk,
    _ClientConfig,
    _code_definition,
    _create_body,
    _kind_body,
    _on_unavailable,
    _one_key,
    _PackedRefused,
    _point_into_file,
    _Retry,
    to_wire,
)
from .errors import GraderValidationError
from .results import BatchResult
from .types import Grader, GradeResponse, GraderPage, GraderWithSource, Limits, Secret

if TYPE_CHECKING:
    from .reward import AsyncRewardFunction, OnError

__all__ = ["AsyncGradebox"]


class AsyncGradebox(_ClientConfig):
    """A client of one project of a Gradebox server, for asyncio: ``await client.graders.grade(…)``.

    Configured as Gradebox is (``base_url``, ``project``, ``api_key`` from GRADEBOX_URL,
    GRADEBOX_PROJECT, GRADEBOX_API_KEY; ``timeout`` per attempt; ``max_retries``;
    ``max_concurrency``: the chunks of a split grade_batch in flight at once). Use it from one
    event loop at a time; ``await client.aclose()`` (or ``async with``) closes its connections."""

    def _setup(self) -> None:
        self._transport = AsyncTransport(self.base_url, self.timeout, max_idle=max(16, 2 * self.max_concurrency))
        self._limits: Limits | None = None
        self.graders = AsyncGraders(self)
        self.secrets = AsyncSecrets(self)

    async def aclose(self) -> None:
        self._transport.close()

    async def __aenter__(self) -> AsyncGradebox:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def limits(self, *, refresh: bool = False) -> Limits:
        """The server's request limits (GET /v1/limits), read once per client."""
        if self._limits is None or refresh:
            self._limits = cast(Limits, (await self._request("GET", "/v1/limits", retry=True))[0])
        return self._limits

    def reward_function(
        self,
        key: str,
        *,
        version: int | None = None,
        on_error: OnError = None,
        columns: Sequence[str] | None = None,
        name: str | None = None,
        deadline_ms: int | None = None,
        on_unavailable: OnUnavailable | None = None,
        group_by: str | None = None,
        as_float: bool = False,
    ) -> AsyncRewardFunction:
        """An ``async def``-like reward function for TRL's GRPOTrainer (which gathers async
        reward functions concurrently on its event loop): see gradebox.reward.AsyncRewardFunction."""
        from .reward import AsyncRewardFunction

        return AsyncRewardFunction(
            self,
            key,
            version=version,
            on_error=on_error,
            columns=columns,
            name=name,
            deadline_ms=deadline_ms,
            on_unavailable=on_unavailable,
            group_by=group_by,
            as_float=as_float,
        )

    async def _request(
        self,
        method: str,
        path: str,
        *,
        retry: bool,
        body: object = None,
        raw_body: bytes | None = None,
        query: Mapping[str, str | int | None] | None = None,
        packed: bool = False,
    ) -> tuple[Any, str | None]:
        """One API call, as Gradebox._request: the parsed JSON and the request id."""
        call = _Call(self, method, path, retry=retry, body=body, raw_body=raw_body, query=query, packed=packed)
        while True:
            try:
                response = await self._transport.send(method, call.path, call.headers, call.data, fresh=not retry)
            except StaleConnection as stale:
                call.stale(stale)
                continue
            except ResponseTooLarge as large:
                raise call.too_large(large) from None
            except OSError as error:  # TimeoutError is an OSError
                await asyncio.sleep(call.failed(error))
                continue
            outcome = call.answered(response)
            if isinstance(outcome, _Retry):
                await asyncio.sleep(outcome.wait)
                continue
            return outcome


class _AsyncCreate:
    def __init__(self, graders: AsyncGraders) -> None:
        self._graders = graders

    async def function(
        self,
        key: str,
        fn: Any = None,
        *,
        source: str | None = None,
        file: str | os.PathLike[str] | None = None,
        description: str = "",
        language: str | None = None,
    ) -> GraderWithSource:
        """As Gradebox's ``graders.create.function``."""
        body, source_map = _create_body(key, fn, source, file, description, language)
        try:
            answer = await self._graders._client._request("POST", self._graders._path(), body=body, retry=False)
        except GraderValidationError as error:
            _point_into_file(error, source_map)
            raise
        return cast(GraderWithSource, answer[0])

    async def code(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """As Gradebox's ``graders.create.code``."""
        body = {"key": key, "description": description, **_code_definition(definition)}
        answer = await self._graders._client._request("POST", self._graders._path("/code"), body=body, retry=False)
        return cast(GraderWithSource, answer[0])

    async def combined(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """As Gradebox's ``graders.create.combined``."""
        return await self._kind("/combined", key, description, definition)

    async def binary_judge(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """As Gradebox's ``graders.create.binary_judge``."""
        return await self._kind("/binary-judge", key, description, definition)

    async def rubric_judge(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """As Gradebox's ``graders.create.rubric_judge``."""
        return await self._kind("/rubric-judge", key, description, definition)

    async def prebuilt_judge(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """As Gradebox's ``graders.create.prebuilt_judge``."""
        return await self._kind("/prebuilt-judge", key, description, definition)

    async def external_endpoint(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """As Gradebox's ``graders.create.external_endpoint``."""
        return await self._kind("/external-endpoint", key, description, definition)

    async def _kind(self, path: str, key: str, description: str, definition: Mapping[str, Any]) -> GraderWithSource:
        body = _kind_body(key, description, definition)
        answer = await self._graders._client._request("POST", self._graders._path(path), body=body, retry=False)
        return cast(GraderWithSource, answer[0])


class AsyncGraders:
    """``client.graders``: the project's graders (each call as Gradebox's, awaited)."""

    def __init__(self, client: AsyncGradebox) -> None:
        self._client = client
        self.create = _AsyncCreate(self)

    def _path(self, suffix: str = "") -> str:
        return f"/v1/projects/{urllib.parse.quote(self._client.project, safe='')}/graders{suffix}"

    def _key_path(self, key: str, suffix: str = "") -> str:
        return self._path(f"/{urllib.parse.quote(key, safe='')}{suffix}")

    async def list_page(self, *, limit: int | None = None, cursor: str | None = None) -> GraderPage:
        query = {"limit": limit, "cursor": cursor}
        return cast(GraderPage, (await self._client._request("GET", self._path(), query=query, retry=True))[0])

    async def iter(self, *, page_size: int = 200) -> AsyncIterator[Grader]:
        cursor: str | None = None
        while True:
            page = await self.list_page(limit=page_size, cursor=cursor)
            for grader in page["data"]:
                yield grader
            cursor = page["nextCursor"]
            if not cursor:
                return

    async def list(self, *, page_size: int = 200) -> builtins.list[Grader]:
        return [g async for g in self.iter(page_size=page_size)]

    async def get(self, key: str | None = None, *, grader_key: str | None = None) -> GraderWithSource:
        path = self._key_path(_one_key(key, grader_key))
        return cast(GraderWithSource, (await self._client._request("GET", path, retry=True))[0])

    async def lock(self, key: str | None = None, locked: bool = True, *, grader_key: str | None = None) -> Grader:
        path = self._key_path(_one_key(key, grader_key), "/lock")
        return cast(Grader, (await self._client._request("PUT", path, body={"locked": locked}, retry=True))[0])

    async def delete(self, key: str | None = None, *, grader_key: str | None = None) -> None:
        await self._client._request("DELETE", self._key_path(_one_key(key, grader_key)), retry=True)

    async def grade(
        self, key: str, thread: Mapping[str, Any], version: int | None = None, *, on_unavailable: OnUnavailable | None = None
    ) -> GradeResponse:
        """As Gradebox's: a failure raises GraderRuntimeError, an abstention GraderAbstainedError."""
        body: dict[str, Any] = {"thread": to_wire(thread)}
        if version is not None:
            body["version"] = version
        if on_unavailable is not None:
            body["onUnavailable"] = _on_unavailable(on_unavailable)
        return cast(GradeResponse, (await self._client._request("POST", self._key_path(key, "/grade"), body=body, retry=True))[0])

    async def grade_batch(
        self,
        key: str,
        threads: Sequence[Mapping[str, Any]],
        version: int | None = None,
        *,
        deadline_ms: int | None = None,
        on_unavailable: OnUnavailable | None = None,
        group_by: str | None = None,
        groups: Sequence[int] | None = None,
        summary: bool | Mapping[str, Any] | None = None,
    ) -> BatchResult:
        """As Gradebox's grade_batch (chunks, version pinning, deadline, groups, summary), with
        up to ``max_concurrency`` chunks in flight at once on the running loop."""
        return (
            await self._grade_batch(
                key,
                threads,
                version,
                deadline_ms=deadline_ms,
                on_unavailable=on_unavailable,
                group_by=group_by,
                groups=groups,
                summary=summary,
            )
        )[0]

    async def _grade_batch(
        self,
        key: str,
        threads: Sequence[Mapping[str, Any]],
        version: int | None,
        *,
        deadline_ms: int | None = None,
        on_unavailable: OnUnavailable | None = None,
        group_by: str | None = None,
        groups: Sequence[int] | None = None,
        summary: bool | Mapping[str, Any] | None = None,
    ) -> tuple[BatchResult, builtins.list[str | None]]:
        plan = _BatchPlan(
            self._key_path(key, "/grade-batch"),
            threads,
            version,
            deadline_ms=deadline_ms,
            on_unavailable=on_unavailable,
            group_by=group_by,
            groups=groups,
            summary=summary,
            packed=not self._client._packed_refused,
        )
        try:
            return await self._send(plan, version)
        except _PackedRefused:
            # a server from before the packed wire: the batch again as JSON, cut by JSON's sizes,
            # and JSON from here on
            self._client._packed_refused = True
            return await self._send(plan.as_json(), version)

    async def _send(self, plan: _BatchPlan, version: int | None) -> tuple[BatchResult, builtins.list[str | None]]:
        gate = asyncio.Semaphore(self._client.max_concurrency)

        async def send(indexes: builtins.list[int], pinned: int | None, first: bool) -> _Chunk:
            async with gate:
                raw = plan.body(indexes, pinned, first)
                if raw is None:
                    return _Chunk.expired(indexes, pinned)
                answer, request_id = await self._client._request(
                    "POST", plan.path, raw_body=raw, packed=plan.packs(indexes), retry=True
                )
            return _Chunk.parse(answer, indexes, request_id)

        limits = await self._client.limits() if plan.count else None
        parts = plan.parts(lambda: cast(Limits, limits))
        if not parts:
            chunks = [await send([], version, True)]
        elif version is not None or len(parts) == 1:
            chunks = list(await asyncio.gather(*(send(part, version, i == 0) for i, part in enumerate(parts))))
        else:
            first = await send(parts[0], None, True)
            chunks = [first, *await asyncio.gather(*(send(part, first.version, False) for part in parts[1:]))]
        return plan.merge(chunks)


class AsyncSecrets:
    """``client.secrets``, as Gradebox's, awaited."""

    def __init__(self, client: AsyncGradebox) -> None:
        self._client = client

    def _path(self, name: str | None = None) -> str:
        base = f"/v1/projects/{urllib.parse.quote(self._client.project, safe='')}/secrets"
        return base if name is None else f"{base}/{urllib.parse.quote(name, safe='')}"

    async def set(self, name: str, value: str) -> Secret:
        if not isinstance(value, str):
            raise TypeError(f"a secret's value is a str, not {type(value).__name__}")
        return cast(Secret, (await self._client._request("PUT", self._path(name), body={"value": value}, retry=True))[0])

    async def list(self) -> builtins.list[Secret]:
        return cast("builtins.list[Secret]", (await self._client._request("GET", self._path(), retry=True))[0]["data"])

    async def get(self, name: str) -> Secret:
        return cast(Secret, (await self._client._request("GET", self._path(name), retry=True))[0])

    async def delete(self, name: str) -> None:
        await self._client._request("DELETE", self._path(name), retry=True)
