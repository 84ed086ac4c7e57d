"""The Gradebox client: resources over HTTP, with timeouts, retries where a repeat is safe
(backoff with jitter, honouring retry-after) and typed errors. Mirrors sdk/client.ts."""

from __future__ import annotations

import builtins
import email.utils
import http.client
import json
import os
import random
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, cast

from ._packed import PACKED_BATCH_TYPE, PackedThreads
from ._source import SourceMap, language_of_file, mapped_function_source
from ._transport import Response, ResponseTooLarge, StaleConnection, Transport
from ._version import __version__
from ._summary import summarize
from .errors import APIConnectionError, APIError, APITimeoutError, GradeboxError, GraderValidationError, error_from_response
from .results import BatchResult, Result
from .types import LANGUAGES, Grader, GradeResponse, GraderPage, GraderWithSource, Limits, Secret, Thread

if TYPE_CHECKING:
    from .reward import OnError, RewardFunction

__all__ = ["Gradebox", "Graders", "OnUnavailable", "Secrets"]

#: judge and endpoint graders: what a thread whose model or endpoint does not answer becomes
OnUnavailable = Literal["error", "abstain"]

RETRY_STATUS = frozenset({408, 429, 502, 503, 504})
#: answered with a status worth retrying, but a repeat would not help: only the operator can change
#: SECRETS_NOT_CONFIGURED, and the server has already retried a judge's model or an endpoint with its
#: own backoff before answering 502 (repeating it here would multiply the attempts and open the
#: server's circuit breaker on a user's first call)
LASTING_CODES = frozenset(
    {
        "SECRETS_NOT_CONFIGURED",
        "JUDGE_UNAVAILABLE",
        "JUDGE_INVALID_OUTPUT",
        "ENDPOINT_UNAVAILABLE",
        "ENDPOINT_INVALID_RESPONSE",
    }
)
DEFAULT_URL = "http://127.0.0.1:8787"


def _env(name: str) -> str | None:
    return os.environ.get(name) or None


def _backoff(attempt: int) -> float:
    """Seconds before retry ``attempt`` (0-based): 0.5 s doubling to at most 8 s, ±25 % jitter."""
    return min(8.0, 0.5 * 2.0**attempt) * (0.75 + random.random() * 0.5)


def _retry_after(header: str | None) -> float | None:
    """retry-after as seconds (a number or an HTTP date), within [0, 60]."""
    if not header:
        return None
    try:
        seconds = float(header)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    if seconds != seconds:  # NaN
        return None
    return min(max(seconds, 0.0), 60.0)


def _dumps(value: object) -> bytes:
    # allow_nan=False: NaN and Infinity are not JSON; refuse them here rather than send them
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode("utf-8")


def to_wire(thread: Mapping[str, Any]) -> Thread:
    """A thread as the API takes it: ``turns``, and ``metadata`` unless it is absent or None."""
    if not isinstance(thread, Mapping) or "turns" not in thread:
        raise TypeError(f'a thread is a dict {{"turns": [{{"role", "content"}}], "metadata": {{...}}}}, not {thread!r:.200}')
    wire: dict[str, Any] = {"turns": thread["turns"]}
    if thread.get("metadata") is not None:
        wire["metadata"] = thread["metadata"]
    return cast(Thread, wire)


class _ClientConfig:
    """What both clients (Gradebox, AsyncGradebox) are configured with, read and checked once here;
    each makes its own connections in ``_setup``. Pickles without them (a reward function sent to
    another process); the key goes along."""

    base_url: str
    project: str
    timeout: float
    max_retries: int
    max_concurrency: int

    def __init__(
        self,
        base_url: str | None = None,
        project: str | None = None,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 2,
        *,
        max_concurrency: int = 4,
    ) -> None:
        self.base_url = (base_url or _env("GRADEBOX_URL") or DEFAULT_URL).rstrip("/")
        self.project = project or _env("GRADEBOX_PROJECT") or "default"
        self._api_key = api_key if api_key is not None else _env("GRADEBOX_API_KEY")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        if max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if max_concurrency < 1:
            raise ValueError("max_concurrency must be >= 1")
        self.timeout = float(timeout)
        self.max_retries = max_retries
        self.max_concurrency = max_concurrency
        self._setup()

    #: the server answered a packed batch 415 (it predates the packed wire): batches go as JSON
    _packed_refused = False

    def _setup(self) -> None:
        raise NotImplementedError

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self.base_url!r}, project={self.project!r})"

    def __getstate__(self) -> dict[str, Any]:
        keep = ("base_url", "project", "_api_key", "timeout", "max_retries", "max_concurrency")
        return {name: self.__dict__[name] for name in keep}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._setup()


class Gradebox(_ClientConfig):
    """A client of one project of a Gradebox server.

    ``base_url`` defaults to $GRADEBOX_URL, else http://127.0.0.1:8787; ``project`` to
    $GRADEBOX_PROJECT, else "default"; ``api_key`` (sent as ``Authorization: Bearer …``) to
    $GRADEBOX_API_KEY. ``timeout`` is the socket timeout of one attempt, in seconds;
    ``max_retries`` the retries of a request that is safe to repeat; ``max_concurrency`` the
    chunks of a split grade_batch in flight at once.

    Thread-safe: one client may be shared by threads. ``close()`` (or ``with``) closes its
    keep-alive connections and thread pool."""

    graders: Graders
    secrets: Secrets

    def _setup(self) -> None:
        self._transport = Transport(self.base_url, self.timeout)
        self._lock = threading.Lock()
        self._limits: Limits | None = None
        self._executor: ThreadPoolExecutor | None = None
        self.graders = Graders(self)
        self.secrets = Secrets(self)

    def close(self) -> None:
        with self._lock:
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=True)
        self._transport.close()

    def __enter__(self) -> Gradebox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def limits(self, *, refresh: bool = False) -> Limits:
        """The server's request limits (GET /v1/limits), read once per client."""
        with self._lock:
            cached = self._limits
        if cached is not None and not refresh:
            return cached
        limits = cast(Limits, self._request("GET", "/v1/limits", retry=True)[0])
        with self._lock:
            self._limits = limits
        return limits

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
    ) -> RewardFunction:
        """A reward function for RL trainers (TRL's GRPOTrainer ``reward_funcs``) grading with
        grader ``key``: ``reward_fn(prompts, completions, **dataset_columns) -> list[float | None]``
        (None: no reward for the sample). See gradebox.reward.RewardFunction."""
        from .reward import RewardFunction

        return RewardFunction(
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

    def _pool(self) -> ThreadPoolExecutor:
        with self._lock:
            if self._executor is None:
                self._executor = ThreadPoolExecutor(max_workers=self.max_concurrency, thread_name_prefix="gradebox")
            return self._executor

    def _request(
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
        """One API call; returns the parsed JSON (None for an empty answer) and the request id.
        ``retry``: True when repeating the request cannot change the outcome. ``packed``: the raw
        body is a packed batch (_PackedRefused when the server predates the packed wire)."""
        call = _Call(self, method, path, retry=retry, body=body, raw_body=raw_body, query=query, packed=packed)
        while True:
            try:
                response = self._transport.send(method, call.path, call.headers, call.data, fresh=not retry)
            except StaleConnection as stale:
                call.stale(stale)
                continue
            except ResponseTooLarge as large:
                raise call.too_large(large) from None
            except (OSError, http.client.HTTPException) as error:  # TimeoutError is an OSError
                time.sleep(call.failed(error))
                continue
            outcome = call.answered(response)
            if isinstance(outcome, _Retry):
                time.sleep(outcome.wait)
                continue
            return outcome


class _PackedRefused(Exception):
    """The server answered a packed batch 415: it predates the packed wire."""


class _Retry:
    """What _Call says when a request is worth repeating: wait this many seconds first."""

    __slots__ = ("wait",)

    def __init__(self, wait: float) -> None:
        self.wait = wait


class _Call:
    """One API call's request and its retry policy, apart from the I/O, so that the blocking
    client and AsyncGradebox send the same requests and read the answers alike: each failure or
    answer is handed here, which raises, returns the result, or says how long to wait before
    the next attempt."""

    def __init__(
        self,
        client: Any,
        method: str,
        path: str,
        *,
        retry: bool,
        body: object = None,
        raw_body: bytes | None = None,
        query: Mapping[str, str | int | None] | None = None,
        packed: bool = False,
    ) -> None:
        if query:
            kept = {k: str(v) for k, v in query.items() if v is not None}
            if kept:
                path = f"{path}?{urllib.parse.urlencode(kept)}"
        data = raw_body if raw_body is not None else (None if body is None else _dumps(body))
        headers = {"accept": "application/json", "user-agent": f"gradebox-python/{__version__}"}
        if data is not None:
            headers["content-type"] = PACKED_BATCH_TYPE if packed else "application/json"
        elif method not in ("GET", "HEAD"):
            data = b""
        if client._api_key:
            headers["authorization"] = f"Bearer {client._api_key}"
        self.method, self.path, self.headers, self.data = method, path, headers, data
        #: raw_body is a packed batch (the packed wire): a 415 says the server predates it
        self._packed = packed
        self.retry = retry
        self._max_retries: int = client.max_retries
        self._timeout: float = client.timeout
        self._base_url: str = client.base_url
        self._attempt = 0
        self._stale_retried = False

    @property
    def _can_retry(self) -> bool:
        return self.retry and self._attempt < self._max_retries

    def stale(self, stale: StaleConnection) -> None:
        """The server closed a kept-alive connection: the request never reached it; repeated
        once at once (returns), else raised."""
        if self.retry and not self._stale_retried:
            self._stale_retried = True
            return
        raise APIConnectionError(f"{self.method} {self.path}: the connection was closed: {stale.cause}") from stale.cause

    def too_large(self, large: ResponseTooLarge) -> APIError:
        return APIError(large.status, "RESPONSE_TOO_LARGE", large.headers.get("x-request-id"), f"{self.method} {self.path}: {large}")

    def failed(self, error: BaseException) -> float:
        """No answer (refused, reset, timed out, malformed): the seconds to wait before trying
        again, or raises."""
        if self._can_retry:
            wait = _backoff(self._attempt)
            self._attempt += 1
            return wait
        if isinstance(error, TimeoutError):
            raise APITimeoutError(f"{self.method} {self.path} timed out after {self._timeout:g} s") from error
        if isinstance(error, http.client.HTTPException):  # a malformed answer
            raise APIConnectionError(f"{self.method} {self.path}: {type(error).__name__}: {error}") from error
        raise APIConnectionError(f"cannot reach Gradebox at {self._base_url}: {error}") from error

    def answered(self, response: Response) -> tuple[Any, str | None] | _Retry:
        """The parsed JSON and the request id, a _Retry, or raises the answer's error."""
        method, path = self.method, self.path
        request_id = response.headers.get("x-request-id")
        text = response.body.decode("utf-8", errors="replace")
        if 200 <= response.status < 300:
            if not text:
                return None, request_id
            try:
                return json.loads(text), request_id
            except ValueError:
                raise APIError(
                    response.status, "INVALID_RESPONSE", request_id, f"{method} {path}: the answer is not JSON: {text[:200]!r}"
                ) from None
        try:
            problem = json.loads(text)
        except ValueError:
            problem = None
        if not isinstance(problem, dict):
            problem = {"detail": text[:500]} if text else {}
        if response.status == 415 and self._packed:
            # a server from before the packed wire: grade_batch starts again as JSON
            raise _PackedRefused()
        if self._can_retry and response.status in RETRY_STATUS and problem.get("code") not in LASTING_CODES:
            wait = _retry_after(response.headers.get("retry-after"))
            retry = _Retry(_backoff(self._attempt) if wait is None else wait)
            self._attempt += 1
            return retry
        if request_id is None and isinstance(problem.get("requestId"), str):
            request_id = problem["requestId"]
        raise error_from_response(response.status, problem, request_id)


class _Create:
    """``client.graders.create``: register a grader of each kind (``function``, ``code``,
    ``combined``, ``binary_judge``, ``rubric_judge``, ``prebuilt_judge``, ``external_endpoint``)."""

    def __init__(self, graders: Graders) -> None:
        self._graders = graders

    def function(
        self,
        key: str,
        fn: Any = None,
        *,
        source: str | None = None,
        file: str | os.PathLike[str] | None = None,
        description: str = "",
        language: str | None = None,
    ) -> GraderWithSource:
        """Registers a function grader from exactly one of: ``fn``, a top-level Python function
        (its source is read from its file or notebook cell and renamed to ``grade``, with the
        imports it uses: see gradebox._source); ``source``, a string; or ``file``, a path.

        ``language`` ("python" or "typescript"): absent, ``fn`` is python, a ``.py`` file python
        and a ``.ts``/``.js`` one typescript; for ``source`` none is sent and the server takes
        typescript, so pass ``language="python"`` with Python source. The server runs the five
        checks: GraderValidationError (``check``, ``line``, ``column``: for ``fn``, in its file) when one fails,
        ConflictError (GRADER_EXISTS) when the key is taken. Not retried: a create is not safe
        to repeat."""
        body, source_map = _create_body(key, fn, source, file, description, language)
        try:
            return cast(GraderWithSource, self._graders._client._request("POST", self._graders._path(), body=body, retry=False)[0])
        except GraderValidationError as error:
            _point_into_file(error, source_map)
            raise

    def code(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """Registers a code-execution grader: it runs the completion's program against the tests
        in each thread's metadata (APPS, TACO, CodeContests, LiveCodeBench, HumanEval, MBPP
        shapes), a fresh interpreter per test. ``definition``: any of ``languages``, ``extract``,
        ``tests``, ``tests_key``, ``compare``, ``abs_tol``, ``rel_tol``, ``scoring``, ``limits``
        (``cpu_ms``, ``memory_mb``, ``output_bytes``) and ``max_tests`` (or their camelCase wire
        names); each has a default (docs/code-graders.md). ConflictError (GRADER_EXISTS) when the
        key is taken. Not retried."""
        body = {"key": key, "description": description, **_code_definition(definition)}
        return cast(GraderWithSource, self._graders._client._request("POST", self._graders._path("/code"), body=body, retry=False)[0])


    def combined(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """A grader combining others: ``mode`` ("weighted", "any" or "all") and ``graders``
        ([{"grader_key": …, "weight": …}]). Not retried."""
        return self._kind("/combined", key, description, definition)

    def binary_judge(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """An LLM judge answering yes or no: ``judge_model`` (a model registered in the project),
        ``criteria``, and optionally ``template``, ``template_variables``, ``feedback_key`` and
        ``samples`` (threads, or {"thread": …}). NotFoundError (MODEL_NOT_FOUND) when the model
        is not registered. Not retried."""
        return self._kind("/binary-judge", key, description, definition)

    def rubric_judge(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """An LLM judge scoring a rubric: ``judge_model``, ``criteria`` ([{"name", "requirement",
        "weight", "options"}]), and optionally ``cannot_assess``, ``partial_credit``. Not retried."""
        return self._kind("/rubric-judge", key, description, definition)

    def prebuilt_judge(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """A prebuilt metric judged by ``judge_model``: ``type`` ("FAITHFULNESS",
        "CONTEXT_RELEVANCY" or "ANSWER_RELEVANCY"). Not retried."""
        return self._kind("/prebuilt-judge", key, description, definition)

    def external_endpoint(self, key: str, *, description: str = "", **definition: Any) -> GraderWithSource:
        """A reward server of your own: ``url``, and optionally ``transport`` ("http" or
        "websocket"), ``headers_env``, ``headers_secret``, ``timeout_ms``, ``batch``,
        ``batch_size``, ``max_concurrency``. The server's egress policy must allow the address
        (EGRESS_DENIED otherwise). Not retried."""
        return self._kind("/external-endpoint", key, description, definition)

    def _kind(self, path: str, key: str, description: str, definition: Mapping[str, Any]) -> GraderWithSource:
        body = _kind_body(key, description, definition)
        return cast(GraderWithSource, self._graders._client._request("POST", self._graders._path(path), body=body, retry=False)[0])


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def _kind_body(key: str, description: str, definition: Mapping[str, Any]) -> dict[str, Any]:
    """A grader definition in the wire's names: top-level snake_case keys made camelCase, and a
    combined grader's parts' (the values of maps, such as template_variables' or headers_env's
    own keys, kept as they are); samples as wire threads."""
    body: dict[str, Any] = {"key": key, "description": description}
    for name, value in definition.items():
        body[_camel(name)] = value
    if isinstance(body.get("graders"), Sequence) and not isinstance(body["graders"], (str, bytes)):
        body["graders"] = [{_camel(k): v for k, v in p.items()} if isinstance(p, Mapping) else p for p in body["graders"]]
    if isinstance(body.get("samples"), Sequence) and not isinstance(body["samples"], (str, bytes)):
        body["samples"] = [
            {"thread": to_wire(s["thread"] if isinstance(s, Mapping) and "thread" in s else s)} for s in body["samples"]
        ]
    return body


_CODE_FIELDS = {"tests_key": "testsKey", "abs_tol": "absTol", "rel_tol": "relTol", "max_tests": "maxTests"}
_LIMIT_FIELDS = {"cpu_ms": "cpuMs", "memory_mb": "memoryMb", "output_bytes": "outputBytes"}


def _code_definition(definition: Mapping[str, Any]) -> dict[str, Any]:
    """A code grader's definition in the wire's names (snake_case accepted); the server checks it."""
    body = {_CODE_FIELDS.get(k, k): v for k, v in definition.items()}
    if isinstance(body.get("limits"), Mapping):
        body["limits"] = {_LIMIT_FIELDS.get(k, k): v for k, v in body["limits"].items()}
    return body


def _create_body(
    key: str, fn: Any, source: str | None, file: str | os.PathLike[str] | None, description: str, language: str | None
) -> tuple[dict[str, Any], SourceMap | None]:
    """create.function's request body, and where the sent source's lines come from (for ``fn``)."""
    if sum(x is not None for x in (fn, source, file)) != 1:
        raise GradeboxError("pass exactly one of fn, source or file (create_function: source or path)")
    if language is not None and language not in LANGUAGES:
        raise GradeboxError(f"language must be one of {', '.join(LANGUAGES)}, not {language!r}")
    source_map: SourceMap | None = None
    if fn is not None:
        if language not in (None, "python"):
            raise GradeboxError(f"fn is a Python function, not {language} source: pass it as source= or file=")
        source, source_map = mapped_function_source(fn)
        language = "python"
    elif file is not None:
        source = Path(file).read_text(encoding="utf-8")
        language = language or language_of_file(os.fspath(file))
    body: dict[str, Any] = {"key": key, "source": source, "description": description}
    if language is not None:
        body["language"] = language
    return body, source_map


def _point_into_file(error: GraderValidationError, source_map: SourceMap | None) -> None:
    # the server counts the sent source (imports, then the renamed def): point into the user's file
    if source_map is not None:
        error._file_position = source_map.position(error.source_line, error.source_column)


class Graders:
    """``client.graders``: the project's graders."""

    def __init__(self, client: Gradebox) -> None:
        self._client = client
        #: ``create.function(key, fn=grade | source=… | file=…)``
        self.create = _Create(self)

    def _path(self, suffix: str = "") -> str:
        return f"/v1/projects/{urllib.parse.quote(self._client.project, safe='')}/graders{suffix}"

    def _key_path(self, key: str, suffix: str = "") -> str:
        return self._path(f"/{urllib.parse.quote(key, safe='')}{suffix}")

    def create_function(
        self,
        key: str,
        *,
        source: str | None = None,
        path: str | os.PathLike[str] | None = None,
        description: str = "",
        language: str | None = None,
    ) -> GraderWithSource:
        """``create.function`` under its first name: ``path`` is its ``file``. Kept for the
        callers written before ``create.function`` existed; the two do the same."""
        return self.create.function(key, source=source, file=path, description=description, language=language)

    def list_page(self, *, limit: int | None = None, cursor: str | None = None) -> GraderPage:
        """One page of the project's graders, sorted by key (``limit`` at most 200)."""
        query = {"limit": limit, "cursor": cursor}
        return cast(GraderPage, self._client._request("GET", self._path(), query=query, retry=True)[0])

    def iter(self, *, page_size: int = 200) -> Iterator[Grader]:
        """Every grader of the project, fetched a page at a time."""
        cursor: str | None = None
        while True:
            page = self.list_page(limit=page_size, cursor=cursor)
            yield from page["data"]
            cursor = page["nextCursor"]
            if not cursor:
                return

    def list(self, *, page_size: int = 200) -> builtins.list[Grader]:
        """Every grader of the project (follows pages)."""
        return [*self.iter(page_size=page_size)]

    def get(self, key: str | None = None, *, grader_key: str | None = None) -> GraderWithSource:
        """One grader with its source; NotFoundError (GRADER_NOT_FOUND) when there is none.
        ``grader_key=`` is another name for ``key`` (the graders page writes ``get(grader_key=…)``),
        as for ``lock`` and ``delete``."""
        path = self._key_path(_one_key(key, grader_key))
        return cast(GraderWithSource, self._client._request("GET", path, retry=True)[0])

    def lock(self, key: str | None = None, locked: bool = True, *, grader_key: str | None = None) -> Grader:
        """Locks (or with ``locked=False`` unlocks) a grader: a locked one cannot be deleted or updated."""
        path = self._key_path(_one_key(key, grader_key), "/lock")
        return cast(Grader, self._client._request("PUT", path, body={"locked": locked}, retry=True)[0])

    def delete(self, key: str | None = None, *, grader_key: str | None = None) -> None:
        """Refused with ConflictError (GRADER_LOCKED) while the grader is locked, GRADER_IN_USE
        while a combined grader uses it."""
        self._client._request("DELETE", self._key_path(_one_key(key, grader_key)), retry=True)

    def grade(
        self, key: str, thread: Mapping[str, Any], version: int | None = None, *, on_unavailable: OnUnavailable | None = None
    ) -> GradeResponse:
        """Grades one thread (with ``version``, that stored version); a grader failure raises
        GraderRuntimeError with its code (GRADER_ERROR, GRADER_TIMEOUT, …), an abstention
        GraderAbstainedError (``abstained.code``, ``abstained.reason``): never a score.
        ``on_unavailable="abstain"``: a judge model or endpoint that does not answer is an
        abstention (JUDGE_UNAVAILABLE / ENDPOINT_UNAVAILABLE) instead of a 502 error."""
        body: dict[str, Any] = {"thread": to_wire(thread)}
        if version is not None:
            body["version"] = version
        if on_unavailable is not None:
            body["onUnavailable"] = _on_unavailable(on_unavailable)
        return cast(GradeResponse, self._client._request("POST", self._key_path(key, "/grade"), body=body, retry=True)[0])

    def grade_batch(
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
        """Grades many threads; results come back in input order, each a gradebox.Result whose
        ``outcome`` is "scored" (``score``), "error" (``error``: a failing item does not fail the
        batch) or "abstained" (``abstained``: no score is honest for it).

        ``deadline_ms``: answer within that many milliseconds of this call: unfinished threads
        come back abstained with DEADLINE_EXCEEDED (``deadline_exceeded`` counts them).
        ``on_unavailable="abstain"``: an unanswering judge model or endpoint is an abstention.
        ``group_by`` (a metadata field, e.g. "prompt_id") or ``groups`` (one group index per
        thread): the groups a group grader grades together. ``summary``: True, or
        ``{"bins", "threshold", "answerKey"}``: the batch's statistics in ``summary``.

        A list longer than the server's limit (GET /v1/limits: maxBatchThreads, maxBodyBytes) is
        sent in chunks, up to the client's ``max_concurrency`` at once, cut between groups only
        (a group is never split); their components are merged and the summary is computed here
        from all the results. Without ``version`` the first chunk is graded first and the others
        are pinned to the version that graded it, so every result comes from one version even if
        the grader is updated meanwhile. With a deadline, a chunk not yet sent when it passes is
        not sent: its threads are abstained with DEADLINE_EXCEEDED."""
        return self._grade_batch(
            key,
            threads,
            version,
            deadline_ms=deadline_ms,
            on_unavailable=on_unavailable,
            group_by=group_by,
            groups=groups,
            summary=summary,
        )[0]

    def _grade_batch(
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
        """grade_batch's answer, and the request id that answered each result (None for one the
        client abstained on)."""
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
            return self._send(plan, version)
        except _PackedRefused:
            # a server from before the packed wire: the batch again as JSON, cut by JSON's sizes,
            # and JSON from here on
            self._client._packed_refused = True
            return self._send(plan.as_json(), version)

    def _send(self, plan: _BatchPlan, version: int | None) -> tuple[BatchResult, builtins.list[str | None]]:
        def send(indexes: builtins.list[int], pinned: int | None, first: bool) -> _Chunk:
            raw = plan.body(indexes, pinned, first)
            if raw is None:
                return _Chunk.expired(indexes, pinned)
            answer, request_id = self._client._request("POST", plan.path, raw_body=raw, packed=plan.packs(indexes), retry=True)
            return _Chunk.parse(answer, indexes, request_id)

        parts = plan.parts(self._client.limits) if plan.count else []
        if not parts:
            # the server's own answer (400: a batch holds at least one thread)
            chunks = [send([], version, True)]
        elif version is not None or len(parts) == 1:
            chunks = list(self._client._pool().map(lambda part: send(part, version, part is parts[0]), parts))
        else:
            # the first graded alone: its version pins the others
            first = send(parts[0], None, True)
            chunks = [first, *self._client._pool().map(lambda part: send(part, first.version, False), parts[1:])]
        return plan.merge(chunks)


class _BatchPlan:
    """One grade_batch call apart from its I/O (shared by Gradebox and AsyncGradebox): the
    arguments checked, the threads encoded once (packed, or as JSON when one cannot be), cut
    into requests the server's limits admit (never through a group), each request's body, and
    the answers merged."""

    def __init__(
        self,
        path: str,
        threads: Sequence[Mapping[str, Any]],
        version: int | None,
        *,
        deadline_ms: int | None,
        on_unavailable: OnUnavailable | None,
        group_by: str | None,
        groups: Sequence[int] | None,
        summary: bool | Mapping[str, Any] | None,
        packed: bool = True,
        started: float | None = None,
    ) -> None:
        self.started = time.monotonic() if started is None else started
        #: the call, for as_json
        self._call: dict[str, Any] = {
            "path": path,
            "threads": threads,
            "version": version,
            "deadline_ms": deadline_ms,
            "on_unavailable": on_unavailable,
            "group_by": group_by,
            "groups": groups,
            "summary": summary,
        }
        if deadline_ms is not None and (
            isinstance(deadline_ms, bool) or not isinstance(deadline_ms, int) or not 1 <= deadline_ms <= MAX_DEADLINE_MS
        ):
            raise ValueError(f"deadline_ms must be a whole number of milliseconds from 1 to {MAX_DEADLINE_MS}, not {deadline_ms!r}")
        if group_by is not None and groups is not None:
            raise ValueError("pass group_by (a metadata field) or groups (one index per thread), not both")
        if summary is not None and not isinstance(summary, (bool, Mapping)):
            raise TypeError(f'summary is True or {{"bins", "threshold", "answerKey"}}, not {type(summary).__name__}')
        wires = [to_wire(t) for t in threads]
        if groups is not None:
            # a numpy array or a tensor: its ints are Python's only through tolist()
            tolist = getattr(groups, "tolist", None)
            groups = list(tolist() if callable(tolist) else groups)
            if len(groups) != len(wires):
                raise ValueError(f"groups has {len(groups)} indexes for {len(wires)} threads: pass one group index per thread")
            if not all(isinstance(g, int) and not isinstance(g, bool) and g >= 0 for g in groups):
                raise ValueError("groups holds whole numbers >= 0: one group index per thread")
        self.path = path
        self.version = version
        self.deadline_ms = deadline_ms
        self.groups: list[int] | None = None if groups is None else list(groups)
        self.summary = summary
        self.count = len(wires)
        self.packed = PackedThreads.pack(wires, _dumps) if wires and packed else None
        # as JSON only when the batch is not packed: a thread cannot be (the server then words
        # what is wrong with it), or the server predates the packed wire
        self.encoded = [_dumps(w) for w in wires] if self.packed is None else []
        self.fields: dict[str, Any] = {}
        if on_unavailable is not None:
            self.fields["onUnavailable"] = _on_unavailable(on_unavailable)
        if group_by is not None:
            self.fields["groupBy"] = group_by
        if summary is not None and summary is not False:
            self.fields["summary"] = summary
        self.units = _units(wires, group_by, self.groups) if wires else []
        self.grouped = group_by is not None or groups is not None

    def parts(self, limits: Callable[[], Limits]) -> list[list[int]]:
        """The requests to send: each a list of thread indexes (``limits`` is read only when
        there are threads)."""
        if not self.count:
            return []
        got = limits()
        groups = self.groups
        sizes = self.packed.sizes if self.packed is not None else [len(e) + 1 for e in self.encoded]
        per_thread = [size + (len(str(groups[i])) + 1 if groups is not None else 0) for i, size in enumerate(sizes)]
        return _pack(self.units, per_thread, got["maxBatchThreads"], got["maxBodyBytes"] - len(_dumps(self.fields)))

    def as_json(self) -> _BatchPlan:
        """The same call with JSON bodies, its deadline still counted from the call's start."""
        return _BatchPlan(**self._call, packed=False, started=self.started)

    def packs(self, indexes: list[int]) -> bool:
        """Whether the body of these threads is packed."""
        return self.packed is not None and bool(indexes)

    def body(self, indexes: list[int], pinned: int | None, first: bool) -> bytes | None:
        """One request's body (packed, or JSON: see ``packs``), or None when the deadline passed
        before it was sent (the first is always sent: the answer needs its version)."""
        body = dict(self.fields)
        if pinned is not None:
            body["version"] = pinned
        if self.groups is not None:
            body["groups"] = [self.groups[i] for i in indexes]
        if self.deadline_ms is not None:
            left = self.deadline_ms - round((time.monotonic() - self.started) * 1000)
            if left < 1 and not first:
                return None
            body["deadlineMs"] = max(1, left)
        tail = _dumps(body)
        if self.packed is not None and indexes:
            return self.packed.body(indexes, tail)
        return b'{"threads":[' + b",".join(self.encoded[i] for i in indexes) + b"]" + (b"," + tail[1:] if body else b"}")

    def merge(self, chunks: list[_Chunk]) -> tuple[BatchResult, list[str | None]]:
        return _merge(chunks, self.count, self.summary, self.units if self.grouped else None, self.deadline_ms is not None)


class Secrets:
    """``client.secrets``: the project's secrets, values its models (``apiKeySecret``) and
    endpoints (``headersSecret``) send. Write-only: a value is never returned, only its name, the
    host it is bound to (None until a model or endpoint uses it) and its dates."""

    def __init__(self, client: Gradebox) -> None:
        self._client = client

    def _path(self, name: str | None = None) -> str:
        base = f"/v1/projects/{urllib.parse.quote(self._client.project, safe='')}/secrets"
        return base if name is None else f"{base}/{urllib.parse.quote(name, safe='')}"

    def set(self, name: str, value: str) -> Secret:
        """Creates the secret or replaces its value (a rotation: the models and endpoints using
        it send the new value from their next call). A new value is bound to no host until the
        next model or endpoint that uses it binds it to theirs. BadRequestError for an empty
        value, a line break or NUL, or over 8192 bytes of UTF-8; InternalServerError
        (503 SECRETS_NOT_CONFIGURED, not retried) when the server has no secrets key."""
        if not isinstance(value, str):
            raise TypeError(f"a secret's value is a str, not {type(value).__name__}")
        return cast(Secret, self._client._request("PUT", self._path(name), body={"value": value}, retry=True)[0])

    def list(self) -> builtins.list[Secret]:
        """Every secret of the project, sorted by name (never their values)."""
        return cast("builtins.list[Secret]", self._client._request("GET", self._path(), retry=True)[0]["data"])

    def get(self, name: str) -> Secret:
        """One secret; NotFoundError (SECRET_NOT_FOUND) when the project has none of that name."""
        return cast(Secret, self._client._request("GET", self._path(name), retry=True)[0])

    def delete(self, name: str) -> None:
        """Refused with ConflictError (SECRET_IN_USE; ``error.body["usedBy"]`` names them) while
        a model or endpoint uses it."""
        self._client._request("DELETE", self._path(name), retry=True)


class _Chunk:
    """One request's answer, for the threads at ``indexes`` of the whole batch."""

    __slots__ = ("answer", "expired_count", "indexes", "request_id", "results", "version")

    def __init__(
        self, indexes: list[int], results: list[Result], answer: dict[str, Any], version: int | None, request_id: str | None, expired: int = 0
    ) -> None:
        self.indexes = indexes
        self.results = results
        self.answer = answer
        self.version = version
        self.request_id = request_id
        #: threads the client abstained on: the deadline passed before the chunk was sent
        self.expired_count = expired

    @classmethod
    def parse(cls, answer: object, indexes: list[int], request_id: str | None) -> _Chunk:
        def invalid(why: str) -> APIError:
            return APIError(200, "INVALID_RESPONSE", request_id, f"grade-batch: {why}")

        if not isinstance(answer, dict):
            raise invalid("the answer is not an object")
        results = answer.get("results")
        if not isinstance(results, list) or len(results) != len(indexes):
            # a short or long answer would put every later result on the wrong thread
            got = len(results) if isinstance(results, list) else 0
            raise invalid(f"the server answered {got} results for {len(indexes)} threads")
        if not all(isinstance(r, dict) for r in results):
            raise invalid("a result is not an object")
        components = answer.get("components")
        if components is not None and not (
            isinstance(components, dict) and all(isinstance(v, list) and len(v) == len(indexes) for v in components.values())
        ):
            raise invalid("components are not lists aligned with the results")
        version = answer.get("version")
        return cls(indexes, [Result(r) for r in results], answer, version if isinstance(version, int) else None, request_id)

    @classmethod
    def expired(cls, indexes: list[int], version: int | None) -> _Chunk:
        abstained = {"code": "DEADLINE_EXCEEDED", "reason": "the deadline passed before the client sent this part of the batch"}
        results = [Result({"outcome": "abstained", "abstained": dict(abstained)}) for _ in indexes]
        return cls(indexes, results, {}, version, None, expired=len(indexes))


#: the longest deadline a batch may ask for (ms): the server's MAX_DEADLINE_MS
MAX_DEADLINE_MS = 600_000
# room for {"threads":[…],"version":N,"deadlineMs":N} around the threads
_ENVELOPE_BYTES = 96


def _on_unavailable(value: str) -> str:
    if value not in ("error", "abstain"):
        raise ValueError(f'on_unavailable is "error" or "abstain", not {value!r}')
    return value


def _group_value(value: object) -> str:
    """A metadata value as a group key: equal JSON values (1 and 1.0 too) give equal keys."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def _units(wires: list[Thread], group_by: str | None, groups: list[int] | None) -> list[list[int]]:
    """The threads that must travel in one request: each group's (in order of first
    appearance), else each thread alone."""
    if group_by is None and groups is None:
        return [[i] for i in range(len(wires))]
    by_key: dict[object, list[int]] = {}
    for i, wire in enumerate(wires):
        if groups is not None:
            key: object = groups[i]
        else:
            metadata = wire.get("metadata") or {}
            # a thread without the field is a group of one
            key = ("value", _group_value(metadata[group_by])) if group_by in metadata else ("alone", i)
        by_key.setdefault(key, []).append(i)
    return list(by_key.values())


def _pack(units: list[list[int]], sizes: list[int], max_threads: int, max_bytes: int) -> list[list[int]]:
    """Units packed in order into requests of at most ``max_threads`` threads and ``max_bytes``
    bytes of body, each request's threads in input order (a unit too large on its own goes
    alone, for the server to refuse)."""
    max_threads = max(1, max_threads)
    parts: list[list[int]] = []
    current: list[int] = []
    size = _ENVELOPE_BYTES
    for unit in units:
        grow = sum(sizes[i] for i in unit)
        if current and (len(current) + len(unit) > max_threads or size + grow > max_bytes):
            parts.append(sorted(current))
            current, size = [], _ENVELOPE_BYTES
        current.extend(unit)
        size += grow
    parts.append(sorted(current))
    return parts


def _merge(
    chunks: list[_Chunk], n: int, summary: bool | Mapping[str, Any] | None, units: list[list[int]] | None, with_deadline: bool
) -> tuple[BatchResult, list[str | None]]:
    """The chunks' answers as one, in input order."""
    head = chunks[0]
    if len(chunks) == 1:
        merged = BatchResult(head.answer)
        merged["results"] = head.results
        return merged, [head.request_id] * n
    results: list[Result | None] = [None] * n
    request_ids: list[str | None] = [None] * n
    components: dict[str, list[float | None]] = {}
    exceeded = 0
    for chunk in chunks:
        for j, i in enumerate(chunk.indexes):
            results[i] = chunk.results[j]
            request_ids[i] = chunk.request_id
        for name, values in (chunk.answer.get("components") or {}).items():
            channel = components.setdefault(name, [None] * n)
            for j, i in enumerate(chunk.indexes):
                channel[i] = values[j]
        exceeded += chunk.expired_count + int(chunk.answer.get("deadlineExceeded") or 0)
    merged_results = cast("list[Result]", results)
    merged = BatchResult(
        results=merged_results,
        durationMs=round(sum(float(c.answer.get("durationMs", 0.0)) for c in chunks), 3),
        version=head.version,
    )
    if "provenance" in head.answer:
        merged["provenance"] = head.answer["provenance"]
    if components:
        merged["components"] = components
    if summary is not None and summary is not False:
        merged["summary"] = summarize(merged_results, summary, units)
    if with_deadline:
        merged["deadlineExceeded"] = exceeded
    return merged, request_ids


def _one_key(key: str | None, grader_key: str | None) -> str:
    """The grader's key, given as ``key`` or as ``grader_key`` (Adaptive's name for it)."""
    if (key is None) == (grader_key is None):
        raise GradeboxError("pass exactly one of key or grader_key")
    return cast(str, key if key is not None else grader_key)
