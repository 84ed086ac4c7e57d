"""Adaptive's reward server, as its SDK ships it, cut to what goes over the wire: a copy of
adaptive_sdk.external.reward_server.RewardServer (FastAPI routes /score, /batch_score, /info,
/metadata_schema, and the WebSocket /ws answering with websocket_utils.send_large_text's chunks),
reward_types (pydantic models: extra fields forbidden, ``id: int | None``, metadata validated by
the server's own model) and constants. Source: github.com/adaptive-ml/adaptive_sdk,
src/adaptive_sdk/external/{reward_server,reward_types,constants}.py. Left out: the requests
journal and the verbose printing. One change: it listens on 127.0.0.1 (Adaptive's: 0.0.0.0).
The test's scorer (ExpectedServer) is at the bottom."""

from __future__ import annotations

import asyncio
import json
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any, Callable, Final, Generic, Type, TypeVar

import uvicorn
from fastapi import APIRouter, FastAPI, WebSocket
from fastapi.responses import JSONResponse
from loguru import logger
from pydantic import BaseModel as PydanticBaseModel
from pydantic import ConfigDict, model_validator

# constants.py
SCORE_PATH: Final = "/score"
BATCH_SCORE_PATH: Final = "/batch_score"
INFO_PATH: Final = "/info"
METADATA_SCHEMA_PATH: Final = "/metadata_schema"


# reward_types.py
class BaseModel(PydanticBaseModel):
    model_config = ConfigDict(extra="forbid")


MetadataType = TypeVar("MetadataType", bound=BaseModel)


class Turn(BaseModel):
    role: str
    content: str


class ValidatedRequest(BaseModel, Generic[MetadataType]):
    turns: list[Turn]
    metadata: MetadataType
    id: int | None = None

    @model_validator(mode="before")
    @classmethod
    def intercept_none_metadata(cls, data: Any) -> Any:
        # we need an empty dict to map to an empty pydantic base model in the server
        if "metadata" in data and data["metadata"] is None:
            data["metadata"] = {}
        return data


class ValidatedBatchedRequest(BaseModel, Generic[MetadataType]):
    requests: list[ValidatedRequest[MetadataType]]


class Response(BaseModel):
    reward: float
    metadata: dict[str, Any]
    id: int | None = None


class BatchedResponse(BaseModel):
    responses: list[Response]


class ServerInfo(BaseModel):
    version: str
    name: str
    description: str


# websocket_utils.py: a response goes out as {id, total_num_chunks}, then that many {id, chunk}
CHUNK_SIZE = 10 * 1024


async def send_large_text(websocket: WebSocket, text: str, id: int | None) -> None:
    chunks = [text[i : i + CHUNK_SIZE] for i in range(0, len(text), CHUNK_SIZE)]
    await websocket.send_text(json.dumps({"id": id, "total_num_chunks": len(chunks)}))
    for chunk in chunks:
        await websocket.send_text(json.dumps({"id": id, "chunk": chunk}))


# reward_server.py
@dataclass
class Route:
    path: str
    endpoint: Callable[..., Any]
    methods: list[str]


META = TypeVar("META", bound=BaseModel)


class RewardServer(ABC, Generic[META]):
    def __init__(self, port: int, metadata_cls: Type[META], blocking: bool = True):
        self.metadata_cls = metadata_cls
        # need to update the functions with the correct metadata type, otherwise the bound BaseModel is used
        self._score.__annotations__["request"] = ValidatedRequest[metadata_cls]  # type: ignore[valid-type]
        self.batch_score.__annotations__["requests"] = ValidatedBatchedRequest[metadata_cls]  # type: ignore[valid-type]
        self._setup_server(port, blocking)

    async def _score(self, request: ValidatedRequest[META]) -> Response:
        return await self.score(request)

    @abstractmethod
    async def score(self, request: ValidatedRequest[META]) -> Response: ...

    async def batch_score(self, requests: ValidatedBatchedRequest[META]) -> BatchedResponse:
        tasks = []
        for request in requests.requests:
            tasks.append(self._score(request))
        responses = await asyncio.gather(*tasks)
        return BatchedResponse(responses=responses)

    def get_medata_schema(self) -> JSONResponse:
        return JSONResponse(self.metadata_cls.model_json_schema())

    @abstractmethod
    async def info(self) -> ServerInfo: ...

    def _setup_server(self, port: int, blocking: bool) -> None:
        class ThreadServer(uvicorn.Server):
            def run_in_thread(self) -> None:
                self.thread = threading.Thread(target=self.run, daemon=True)
                self.thread.start()

            def stop(self) -> None:
                self.should_exit = True
                self.thread.join()

        routes = [
            Route(SCORE_PATH, self._score, methods=["POST"]),
            Route(BATCH_SCORE_PATH, self.batch_score, methods=["POST"]),
            Route(INFO_PATH, self.info, methods=["GET"]),
            Route(METADATA_SCHEMA_PATH, self.get_medata_schema, methods=["GET"]),
        ]

        async def score_task(websocket: WebSocket, msg: Any) -> None:
            req: ValidatedRequest = ValidatedRequest[self.metadata_cls].model_validate(msg)  # type: ignore
            req_id: int = req.id  # type: ignore
            response = await self._score(req)
            response.id = req_id
            await send_large_text(websocket, response.model_dump_json(), id=req_id)

        async def websocket_endpoint(websocket: WebSocket) -> None:
            await websocket.accept()
            tasks = set()
            while True:
                try:
                    json = await websocket.receive_json()
                    task = asyncio.create_task(score_task(websocket, json))
                    tasks.add(task)
                    task.add_done_callback(tasks.discard)
                except Exception as e:
                    logger.error(f"{e}")
                    break

        router = APIRouter()
        for route in routes:
            router.add_api_route(route.path, route.endpoint, methods=route.methods)
        app = FastAPI()
        app.include_router(router)
        app.add_api_websocket_route("/ws", websocket_endpoint)
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", ws_ping_timeout=None)
        self.server = ThreadServer(config=config)
        if blocking:
            self.server.run()
        else:
            self.server.run_in_thread()


# the test's scorer, written as Adaptive's examples write theirs (MyRewardServer)
class ExpectedMetadata(BaseModel):
    expected: str


class ExpectedServer(RewardServer[ExpectedMetadata]):
    """1.0 when the last turn is metadata.expected, else 0.0; the roles it was sent in its
    metadata. Sets no id: the stock server then answers "id": null over HTTP."""

    def __init__(self, port: int) -> None:
        super().__init__(port, ExpectedMetadata, blocking=False)

    async def score(self, request: ValidatedRequest[ExpectedMetadata]) -> Response:
        last = request.turns[-1].content
        return Response(
            reward=1.0 if last == request.metadata.expected else 0.0,
            metadata={"roles": [t.role for t in request.turns], "feedback": f"expected {request.metadata.expected!r}"},
        )

    async def info(self) -> ServerInfo:
        return ServerInfo(version="1.0", name="expected", description="1 when the last turn is metadata.expected")
