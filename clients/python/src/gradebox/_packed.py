"""grade-batch's packed wire (``application/vnd.gradebox.batch``; sdk/packed-batch.ts in the
Gradebox repository is its definition, docs/http-api.md describes it): the request's options as
JSON, a newline, the head ``[numbers, metadata]`` as JSON, a newline, then every turn's content
concatenated, all UTF-8. The server then checks numbers and one string instead of parsing every
turn of every thread, which takes a third of its CPU per thread off on a cheap grader."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .thread import ROLES

PACKED_BATCH_TYPE = "application/vnd.gradebox.batch"
_ROLE_INDEX = {role: i for i, role in enumerate(ROLES)}


def _utf16_length(text: str) -> int:
    """The server's length of a content: JavaScript's, in UTF-16 code units."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


class PackedThreads:
    """A batch's threads packed once, so that each request of a split batch is joined from them."""

    __slots__ = ("contents", "metadata", "numbers", "others", "sizes")

    def __init__(
        self,
        numbers: list[bytes | list[tuple[str, int]]],
        metadata: list[bytes],
        contents: list[str],
        sizes: list[int],
    ) -> None:
        #: per thread: its turn count, then role index and content length per turn, as JSON
        #: numbers; for a thread with a role outside ROLES, its (role, length) pairs, numbered per request
        self.numbers = numbers
        #: per thread: its metadata as JSON, or b"null"
        self.metadata = metadata
        #: per thread: its turns' contents, concatenated
        self.contents = contents
        #: per thread: the bytes it adds to a body (its numbers, metadata and contents, two commas, its roles)
        self.sizes = sizes

    @classmethod
    def pack(cls, wires: Sequence[Mapping[str, Any]], dumps: Callable[[object], bytes]) -> PackedThreads | None:
        """The threads packed; None when one is not {"turns": [{"role": str, "content": str}, …]}, so
        that the batch goes as JSON and the server words what is wrong with it."""
        numbers: list[bytes | list[tuple[str, int]]] = []
        metadata: list[bytes] = []
        contents: list[str] = []
        sizes: list[int] = []
        for wire in wires:
            turns = wire.get("turns")
            if not isinstance(turns, list) or not turns:
                return None
            parts = [str(len(turns))]
            pairs: list[tuple[str, int]] = []
            known = True
            texts: list[str] = []
            for turn in turns:
                if not isinstance(turn, Mapping) or len(turn) != 2:
                    return None
                role, content = turn.get("role"), turn.get("content")
                if not isinstance(role, str) or not isinstance(content, str):
                    return None
                length = _utf16_length(content)
                index = _ROLE_INDEX.get(role)
                known = known and index is not None
                parts.append(f"{index},{length}")
                pairs.append((role, length))
                texts.append(content)
            numbers.append(",".join(parts).encode("ascii") if known else pairs)
            meta = wire.get("metadata")
            metadata.append(b"null" if meta is None else dumps(meta))
            text = "".join(texts)
            contents.append(text)
            size = len(metadata[-1]) + 2 + (len(text) if text.isascii() else len(text.encode("utf-8")))
            # a thread with other roles: its numbers once numbered, at most, and its roles in the request's list
            n = numbers[-1]
            sizes.append(size + (len(n) if isinstance(n, bytes) else sum(12 + 4 * len(r) + 3 for r, _ in pairs)))
        return cls(numbers, metadata, contents, sizes)

    def body(self, indexes: Sequence[int], options: bytes) -> bytes:
        """The packed body of the threads at ``indexes``, with the request's options (JSON): the
        roles outside ROLES are the ones these threads use, numbered in order of first use."""
        others: dict[str, int] = {}
        numbers: list[bytes] = []
        for i in indexes:
            n = self.numbers[i]
            if isinstance(n, bytes):
                numbers.append(n)
                continue
            parts = [str(len(n))]
            for role, length in n:
                index = _ROLE_INDEX.get(role)
                if index is None:
                    index = others.setdefault(role, len(ROLES) + len(others))
                parts.append(f"{index},{length}")
            numbers.append(",".join(parts).encode("ascii"))
        roles = b",null," + json.dumps(list(others), ensure_ascii=False).encode("utf-8") if others else b""
        head = b"[[" + b",".join(numbers) + b"],[" + b",".join(self.metadata[i] for i in indexes) + b"]" + roles + b"]"
        return options + b"\n" + head + b"\n" + "".join(self.contents[i] for i in indexes).encode("utf-8")


def unpack_body(body: bytes) -> dict[str, Any]:
    """A packed body read back as the JSON body it stands for (for a proxy or a test that looks
    into one); it trusts its input."""
    options, head, text = body.decode("utf-8").split("\n", 2)
    numbers, metadata, *rest = json.loads(head)
    others = rest[1] if len(rest) > 1 else []
    # lengths count UTF-16 code units: walk the contents as UTF-16
    units = text.encode("utf-16-le", "surrogatepass")
    threads: list[dict[str, Any]] = []
    n = 0
    pos = 0
    for meta in metadata:
        turns = []
        for _ in range(numbers[n]):
            index, length = numbers[n + 1], numbers[n + 2]
            role = ROLES[index] if index < len(ROLES) else others[index - len(ROLES)]
            turns.append({"role": role, "content": units[2 * pos : 2 * (pos + length)].decode("utf-16-le", "surrogatepass")})
            pos += length
            n += 2
        n += 1
        threads.append({"turns": turns} if meta is None else {"turns": turns, "metadata": meta})
    return {**json.loads(options), "threads": threads}
