"""grade-batch's packed wire (``application/vnd.gradebox.batch``; sdk/packed-batch.ts in the
Gradebox repository is its definition, docs/http-api.md describes it): the request's options as
JSON, a newline, the head ``[numbers, metadata]`` as JSON, a newline, then every turn's content
concatenated, all UTF-8. The server then checks numbers and one string instead of parsing every
turn of every thread, which halves its CPU per thread on a cheap grader."""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

PACKED_BATCH_TYPE = "application/vnd.gradebox.batch"
ROLES = ("system", "user", "assistant", "tool", "document")
_ROLE_INDEX = {role: i for i, role in enumerate(ROLES)}


def _utf16_length(text: str) -> int:
    """The server's length of a content: JavaScript's, in UTF-16 code units."""
    return len(text) if text.isascii() else len(text.encode("utf-16-le", "surrogatepass")) // 2


class PackedThreads:
    """A batch's threads packed once, so that each request of a split batch is joined from them."""

    __slots__ = ("contents", "metadata", "numbers", "others", "sizes")

    def __init__(self, numbers: list[bytes], metadata: list[bytes], contents: list[str], others: list[str], sizes: list[int]) -> None:
        #: per thread: its turn count, then role index and content length per turn, as JSON numbers
        self.numbers = numbers
        #: per thread: its metadata as JSON, or b"null"
        self.metadata = metadata
        #: per thread: its turns' contents, concatenated
        self.contents = contents
        #: roles outside ROLES, in the order of their indexes (len(ROLES) on)
        self.others = others
        #: per thread: the bytes it adds to a body (its numbers, metadata and contents, and two commas)
        self.sizes = sizes

    @classmethod
    def pack(cls, wires: Sequence[Mapping[str, Any]], dumps: Callable[[object], bytes]) -> PackedThreads | None:
        """The threads packed; None when one is not {"turns": [{"role": str, "content": str}, …],
        "metadata"?}, so that it goes as JSON and the server words what is wrong with it."""
        others: dict[str, int] = {}
        numbers: list[bytes] = []
        metadata: list[bytes] = []
        contents: list[str] = []
        sizes: list[int] = []
        for wire in wires:
            turns = wire.get("turns")
            if not isinstance(turns, list) or not turns or len(wire) > 2 or ("metadata" not in wire and len(wire) != 1):
                return None
            parts = [str(len(turns))]
            texts: list[str] = []
            for turn in turns:
                if not isinstance(turn, Mapping) or len(turn) != 2:
                    return None
                role, content = turn.get("role"), turn.get("content")
                if not isinstance(role, str) or not isinstance(content, str):
                    return None
                index = _ROLE_INDEX.get(role)
                if index is None:
                    index = others.setdefault(role, len(ROLES) + len(others))
                parts.append(f"{index},{_utf16_length(content)}")
                texts.append(content)
            numbers.append(",".join(parts).encode("ascii"))
            meta = wire.get("metadata")
            metadata.append(b"null" if meta is None else dumps(meta))
            text = "".join(texts)
            contents.append(text)
            sizes.append(len(numbers[-1]) + len(metadata[-1]) + 2 + (len(text) if text.isascii() else len(text.encode("utf-8"))))
        return cls(numbers, metadata, contents, list(others), sizes)

    def body(self, indexes: Sequence[int], options: bytes) -> bytes:
        """The packed body of the threads at ``indexes``, with the request's options (JSON)."""
        roles = b",null," + json.dumps(self.others, ensure_ascii=False).encode("utf-8") if self.others else b""
        head = (
            b"[["
            + b",".join(self.numbers[i] for i in indexes)
            + b"],["
            + b",".join(self.metadata[i] for i in indexes)
            + b"]"
            + roles
            + b"]"
        )
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
