"""How the client sends a request: http.client with one keep-alive connection per thread (the
grade_batch pool's threads each keep their own), so a training loop does not pay a TCP
handshake per call."""

from __future__ import annotations

import http.client
import threading
import urllib.parse
from dataclasses import dataclass

__all__ = ["MAX_RESPONSE_BYTES", "Response", "ResponseTooLarge", "StaleConnection", "Transport"]

#: the most of an answer that is read: a batch of 1,000 results with 16 KiB of metadata each is 16 MiB
MAX_RESPONSE_BYTES = 64 * 1024 * 1024

# what a kept-alive connection the server already closed fails with
_STALE_ERRORS = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class StaleConnection(Exception):
    """A reused keep-alive connection failed before any answer: the server had closed it."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


class ResponseTooLarge(Exception):
    """The server answered more than MAX_RESPONSE_BYTES; the rest was not read."""

    def __init__(self, status: int, headers: dict[str, str]) -> None:
        super().__init__(f"the answer is over {MAX_RESPONSE_BYTES} bytes")
        self.status = status
        self.headers = headers


@dataclass(frozen=True)
class Response:
    status: int
    #: lower-case names
    headers: dict[str, str]
    body: bytes


class Transport:
    def __init__(self, base_url: str, timeout: float) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL, not {base_url!r}")
        self._https = parts.scheme == "https"
        self._host = parts.hostname
        self._port = parts.port
        #: the path the API lives under (empty at the root)
        self.base_path = parts.path.rstrip("/")
        self._timeout = timeout
        self._local = threading.local()
        self._lock = threading.Lock()
        self._open: set[http.client.HTTPConnection] = set()

    def _connect(self) -> http.client.HTTPConnection:
        conn: http.client.HTTPConnection
        if self._https:
            conn = http.client.HTTPSConnection(self._host, self._port, timeout=self._timeout)
        else:
            conn = http.client.HTTPConnection(self._host, self._port, timeout=self._timeout)
        with self._lock:
            self._open.add(conn)
        return conn

    def _drop(self, conn: http.client.HTTPConnection) -> None:
        conn.close()
        with self._lock:
            self._open.discard(conn)
        if getattr(self._local, "conn", None) is conn:
            self._local.conn = None

    def send(self, method: str, path: str, headers: dict[str, str], body: bytes | None, *, fresh: bool = False) -> Response:
        """One request. ``fresh``: on a new connection (for requests that must not be repeated,
        so a stale kept-alive one cannot make their outcome unknown)."""
        conn: http.client.HTTPConnection | None = getattr(self._local, "conn", None)
        if conn is not None and fresh:
            self._drop(conn)
            conn = None
        reused = conn is not None
        if conn is None:
            conn = self._connect()
            self._local.conn = conn
        try:
            conn.request(method, self.base_path + path, body=body, headers=headers)
            res = conn.getresponse()
            data = res.read(MAX_RESPONSE_BYTES + 1)
        except _STALE_ERRORS as error:
            self._drop(conn)
            if reused:
                raise StaleConnection(error) from error
            raise
        except BaseException:
            self._drop(conn)
            raise
        response_headers = {name.lower(): value for name, value in res.getheaders()}
        if len(data) > MAX_RESPONSE_BYTES:
            self._drop(conn)  # the rest is unread: the connection cannot carry another request
            raise ResponseTooLarge(res.status, response_headers)
        if res.will_close:
            self._drop(conn)
        return Response(res.status, response_headers, data)

    def close(self) -> None:
        with self._lock:
            conns = list(self._open)
            self._open.clear()
        for conn in conns:
            conn.close()
        self._local = threading.local()
