"""Adaptive's RewardClient, as its packages ship it, cut to what goes over the wire: a copy of
adaptive_harmony.core.reward_client.client.RewardClient (httpx for /score, /info and
/metadata_schema under the URL it is given, no headers; a websockets connection at <url>/ws with
request ids 0, 1, 2… and the server's chunked answers joined by websocket_utils.ResponseAccumulator)
and its reward_types; batch_score is adaptive_sdk.external.reward_client's (harmony's client has
none). Sources: adaptive_harmony (core/reward_client/{client,reward_types,websocket_utils}.py) and
github.com/adaptive-ml/adaptive_sdk (src/adaptive_sdk/external/{reward_client,reward_types}.py)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, Final

import httpx
from httpx import Limits
from jsonschema import ValidationError as JsonSchemaValidationError
from jsonschema import validate
from loguru import logger
from pydantic import BaseModel as PydanticBaseModel
from pydantic import ConfigDict
from websockets.asyncio.client import ClientConnection, connect

SCORE_PATH: Final = "/score"
BATCH_SCORE_PATH: Final = "/batch_score"
INFO_PATH: Final = "/info"
METADATA_SCHEMA_PATH: Final = "/metadata_schema"


# reward_types.py
class BaseModel(PydanticBaseModel):
    model_config = ConfigDict(extra="forbid")


class Turn(BaseModel):
    role: str
    content: str


class Request(BaseModel):
    turns: list[Turn]
    metadata: dict[str, Any] | None = None
    id: int | None = None


class BatchedRequest(BaseModel):
    requests: list[Request]


class Response(BaseModel):
    reward: float
    metadata: dict[str, Any]
    id: int | None = None


class BatchedResponse(BaseModel):
    responses: list[Response]


class MetadataValidationResponse(BaseModel):
    is_valid: bool
    error_message: str | None = None


class ServerInfo(BaseModel):
    version: str
    name: str
    description: str


# websocket_utils.py
class ResponseAccumulator:
    def __init__(self, total_num_chunks: int):
        self.total_num_chunks = total_num_chunks
        self.chunks: list[str] = []

    def add_chunk(self, chunk: str) -> None:
        self.chunks.append(chunk)

    def is_complete(self) -> bool:
        return len(self.chunks) == self.total_num_chunks

    def get_full_data(self) -> str:
        return "".join(self.chunks)


# client.py
async def read_task(client: ClientConnection, responses: dict[int, Response | asyncio.Event]) -> None:
    response_accumulators: dict[int, ResponseAccumulator] = {}
    while True:
        try:
            msg = await client.recv()
            obj = json.loads(msg)
            id = obj["id"]
            if total_num_chunks := obj.get("total_num_chunks"):
                assert id not in response_accumulators
                response_accumulators[id] = ResponseAccumulator(total_num_chunks)
            else:
                assert (acc := response_accumulators.get(id))
                acc.add_chunk(obj["chunk"])
                if acc.is_complete():
                    del response_accumulators[id]
                    response = Response.model_validate_json(acc.get_full_data())
                    # sanity check
                    assert response.id == id
                    event: asyncio.Event = responses.pop(id)  # type: ignore
                    responses[id] = response
                    event.set()
        except Exception as e:
            logger.error(f"{e}")
            break


class RewardClient:
    def __init__(self, base_url: str, max_connections: int = 32, timeout: float | None = None):
        if base_url.startswith("https://"):
            self.use_secure_protocol = True
            self.base_url = base_url.removeprefix("https://")
        else:
            assert base_url.startswith("http://"), f"Unknown url format {base_url}"
            self.use_secure_protocol = False
            self.base_url = base_url.removeprefix("http://")

        self._client = httpx.AsyncClient(
            headers=dict(),
            base_url=self._get_http_url(),
            timeout=timeout,
            limits=Limits(max_connections=max_connections),
        )
        self._metadata_json_schema: None | dict[str, Any] = None
        self.use_websocket = False
        self.max_connections = max_connections

    def _get_http_url(self) -> str:
        return f"https://{self.base_url}" if self.use_secure_protocol else f"http://{self.base_url}"

    def _get_ws_url(self) -> str:
        return f"wss://{self.base_url}/ws" if self.use_secure_protocol else f"ws://{self.base_url}/ws"

    async def setup(self) -> None:
        await self.connect_websocket()

    async def connect_websocket(self) -> RewardClient:
        self.use_websocket = True
        self.ws_client: ClientConnection = await connect(self._get_ws_url(), ping_timeout=None)
        self.ws_responses: dict[int, Response | asyncio.Event] = dict()
        self.read_task = asyncio.create_task(read_task(self.ws_client, self.ws_responses))
        self.request_id = 0
        # no need to blast 2x more than the amount of workers
        self.semaphore = asyncio.Semaphore(self.max_connections)
        return self

    async def drop_websocket(self) -> None:
        assert self.use_websocket
        self.read_task.cancel()
        await self.ws_client.close()

    async def _post(self, path: str, data: dict) -> httpx.Response:
        response = await self._client.post(path, json=data)
        response.raise_for_status()
        return response

    async def _ws_post(self, req: Request) -> Response:
        async with self.semaphore:
            request_id = self.request_id
            self.request_id += 1
            req.id = request_id
            event = asyncio.Event()
            self.ws_responses[request_id] = event
            await self.ws_client.send(req.model_dump_json())
            await event.wait()
            response: Response = self.ws_responses.pop(request_id)  # type: ignore
            assert response.id == request_id
            return response

    async def score(self, req: Request) -> Response:
        if not self.use_websocket:
            response = await self._post(SCORE_PATH, req.model_dump())
            return Response(**response.json())
        else:
            return await self._ws_post(req)

    # adaptive_sdk's
    async def batch_score(self, requests: list[Request]) -> list[Response]:
        response = await self._post(BATCH_SCORE_PATH, BatchedRequest(requests=requests).model_dump())
        batched_response = BatchedResponse(**response.json())
        return batched_response.responses

    async def validate_metadata(self, metadata: dict[Any, Any]) -> MetadataValidationResponse:
        if self._metadata_json_schema is None:
            response = await self._client.get(METADATA_SCHEMA_PATH)
            self._metadata_json_schema = response.json()
        try:
            validate(instance=metadata, schema=self._metadata_json_schema)  # type: ignore
            return MetadataValidationResponse(is_valid=True)
        except JsonSchemaValidationError as e:
            return MetadataValidationResponse(is_valid=False, error_message=str(e))

    async def info(self) -> ServerInfo:
        response = await self._client.get(INFO_PATH)
        response.raise_for_status()
        return ServerInfo(**response.json())
