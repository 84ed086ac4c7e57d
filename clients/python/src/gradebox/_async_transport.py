"""How AsyncGradebox sends a request: HTTP/1.1 over asyncio streams (the standard library has no
async HTTP client, and the package depends on nothing), with a pool of keep-alive connections
so that concurrent calls each have one and a training loop pays no TCP handshake per call.

Connections belong to the event loop that opened them: when the client is used from another
loop (a script calling asyncio.run twice), the old loop's idle connections are dropped."""

from __future__ import annotations

import asyncio
import ssl
import urllib.parse

from ._transport import MAX_RESPONSE_BYTES, Response, ResponseTooLarge, StaleConnection

__all__ = ["AsyncTransport"]

#: the longest status line or header line read; the server's are far shorter
_MAX_LINE = 64 * 1024
_MAX_HEADERS = 200


class _BadResponse(OSError):
    """The answer is not HTTP/1.1 as it should be (an OSError: the client treats it as a
    failed attempt)."""


class _Conn:
    __slots__ = ("reader", "writer")

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def close(self) -> None:
        try:
            self.writer.close()
        except RuntimeError:  # its loop is closed: the socket goes with it
            pass


class AsyncTransport:
    def __init__(self, base_url: str, timeout: float, max_idle: int = 16) -> None:
        parts = urllib.parse.urlsplit(base_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"base_url must be an http:// or https:// URL, not {base_url!r}")
        self._ssl: ssl.SSLContext | None = ssl.create_default_context() if parts.scheme == "https" else None
        self._host = parts.hostname
        self._port = parts.port or (443 if self._ssl else 80)
        self._host_header = parts.netloc.rsplit("@", 1)[-1]
        #: the path the API lives under (empty at the root)
        self.base_path = parts.path.rstrip("/")
        self._timeout = timeout
        self._max_idle = max_idle
        self._idle: list[_Conn] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def _bind(self) -> None:
        loop = asyncio.get_running_loop()
        if loop is not self._loop:
            self._drop_idle()
            self._loop = loop

    def _take(self) -> _Conn | None:
        self._bind()
        while self._idle:
            conn = self._idle.pop()
            if not conn.reader.at_eof() and not conn.writer.is_closing():
                return conn
            conn.close()
        return None

    def _drop_idle(self) -> None:
        idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    async def send(self, method: str, path: str, headers: dict[str, str], body: bytes | None, *, fresh: bool = False) -> Response:
        """One request, within the timeout (TimeoutError past it). ``fresh``: on a new connection
        (for requests that must not be repeated, so a stale kept-alive one cannot make their
        outcome unknown)."""
        if fresh:
            self._bind()
        conn = None if fresh else self._take()
        reused = conn is not None
        try:
            return await asyncio.wait_for(self._exchange(conn, method, path, headers, body, reused), self._timeout)
        except asyncio.TimeoutError as error:  # not TimeoutError itself before Python 3.11
            raise TimeoutError(f"no answer within {self._timeout:g} s") from error

    async def _exchange(
        self, conn: _Conn | None, method: str, path: str, headers: dict[str, str], body: bytes | None, reused: bool
    ) -> Response:
        if conn is None:
            reader, writer = await asyncio.open_connection(self._host, self._port, ssl=self._ssl, limit=_MAX_LINE)
            conn = _Conn(reader, writer)
        keep = False
        try:
            lines = [f"{method} {self.base_path + path} HTTP/1.1", f"host: {self._host_header}"]
            lines += [f"{name}: {value}" for name, value in headers.items()]
            if body is not None:
                lines.append(f"content-length: {len(body)}")
            head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")
            try:
                conn.writer.write(head + (body or b""))
                await conn.writer.drain()
                status_line = await conn.reader.readuntil(b"\r\n")
            except (asyncio.IncompleteReadError, ConnectionResetError, BrokenPipeError, ConnectionAbortedError) as error:
                if reused:
                    raise StaleConnection(error) from error
                raise ConnectionResetError(f"the connection closed before an answer: {error}") from error
            response, keep = await self._read(conn.reader, status_line, method)
            return response
        except asyncio.LimitOverrunError as error:
            raise _BadResponse(f"a line of the answer is over {_MAX_LINE} bytes") from error
        except asyncio.IncompleteReadError as error:
            raise ConnectionResetError(f"the connection closed in the middle of the answer: {error}") from error
        finally:
            if keep and len(self._idle) < self._max_idle:
                self._idle.append(conn)
            else:
                conn.close()

    async def _read(self, reader: asyncio.StreamReader, status_line: bytes, method: str) -> tuple[Response, bool]:
        parts = status_line.decode("latin-1").strip().split(" ", 2)
        if len(parts) < 2 or not parts[0].startswith("HTTP/1.") or not parts[1].isdigit():
            raise _BadResponse(f"not an HTTP/1.1 status line: {status_line[:100]!r}")
        status = int(parts[1])
        headers: dict[str, str] = {}
        for _ in range(_MAX_HEADERS + 1):
            line = (await reader.readuntil(b"\r\n")).decode("latin-1")
            if line == "\r\n":
                break
            name, sep, value = line.partition(":")
            if not sep:
                raise _BadResponse(f"a header line without a colon: {line[:100]!r}")
            headers[name.strip().lower()] = value.strip()
        else:
            raise _BadResponse(f"over {_MAX_HEADERS} header lines")
        keep = headers.get("connection", "").lower() != "close"
        if method == "HEAD" or status in (204, 304) or 100 <= status < 200:
            return Response(status, headers, b""), keep
        if "chunked" in headers.get("transfer-encoding", "").lower():
            body = bytearray()
            while True:
                size_line = (await reader.readuntil(b"\r\n")).split(b";", 1)[0].strip()
                try:
                    size = int(size_line, 16)
                except ValueError:
                    raise _BadResponse(f"a bad chunk size: {size_line[:20]!r}") from None
                if size == 0:
                    while (await reader.readuntil(b"\r\n")) != b"\r\n":  # trailers
                        pass
                    break
                if len(body) + size > MAX_RESPONSE_BYTES:
                    raise ResponseTooLarge(status, headers)
                body += await reader.readexactly(size)
                await reader.readexactly(2)
            return Response(status, headers, bytes(body)), keep
        length = headers.get("content-length")
        if length is not None:
            if not length.isdigit():
                raise _BadResponse(f"a bad content-length: {length[:20]!r}")
            if int(length) > MAX_RESPONSE_BYTES:
                raise ResponseTooLarge(status, headers)
            return Response(status, headers, await reader.readexactly(int(length))), keep
        # neither: the body runs to the end of the connection
        data = await reader.read(MAX_RESPONSE_BYTES + 1)
        while len(data) <= MAX_RESPONSE_BYTES and not reader.at_eof():
            more = await reader.read(MAX_RESPONSE_BYTES + 1 - len(data))
            if not more:
                break
            data += more
        if len(data) > MAX_RESPONSE_BYTES:
            raise ResponseTooLarge(status, headers)
        return Response(status, headers, data), False

    def close(self) -> None:
        self._drop_idle()
