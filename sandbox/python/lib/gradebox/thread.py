"""StringThread: the conversation a grader scores, as Adaptive's ``adaptive_harmony`` shapes it.

The same accessors as the TypeScript class (sdk/thread.ts), with Python names. A thread is
never changed in place: the builders (``user``, ``assistant``, ``with_metadata``, ...) return a
new one. The sandbox builds one thread per graded item over turns it already checked
(``_adopt``), so constructing it costs two attribute stores.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal, Optional, Tuple, Union

# The roles Gradebox names itself. Any other role string a conversation carries (OpenAI's
# ``developer``, ``ipython``, ...) travels as it is: 1 to 64 characters of the Basic Multilingual
# Plane, none a control character (sdk/thread.ts's isRole). No accessor aliases one role to
# another: a ``developer`` turn is never read as ``system``.
KnownRole = Literal["system", "user", "assistant", "tool", "document"]
Role = str
ROLES: Tuple[str, ...] = ("system", "user", "assistant", "tool", "document")
MAX_ROLE_LENGTH = 64
Turn = Tuple[str, str]


def is_role(role: Any) -> bool:
    """Whether ``role`` may be a turn's role: a known role, or any text within the rule above."""
    if not isinstance(role, str):
        return False
    if role in ROLES:
        return True
    if not 0 < len(role) <= MAX_ROLE_LENGTH:
        return False
    for ch in role:
        c = ord(ch)
        if c < 0x20 or 0x7F <= c <= 0x9F or 0xD800 <= c <= 0xDFFF or c > 0xFFFF:
            return False
    return True


_new = object.__new__


def _turn(turn: Any, i: int) -> Turn:
    if isinstance(turn, (tuple, list)):
        if len(turn) != 2:
            raise TypeError(f"StringThread: turn {i} must be a (role, content) pair, got {len(turn)} items")
        role, content = turn
    elif isinstance(turn, Mapping):
        role, content = turn.get("role"), turn.get("content")
    else:
        raise TypeError(f"StringThread: turn {i} must be a (role, content) pair, got {type(turn).__name__}")
    if not is_role(role):
        raise ValueError(
            f"StringThread: turn {i} has role {role!r}; a role is 1 to {MAX_ROLE_LENGTH} characters without control characters "
            f"(e.g. {', '.join(ROLES)}, developer)"
        )
    if not isinstance(content, str):
        raise TypeError(f"StringThread: turn {i} content must be a str, got {type(content).__name__}")
    return (str(role), str(content))


class StringThread:
    """A sequence of (role, content) turns plus the sample's metadata dict."""

    __slots__ = ("_turns", "metadata")

    # the turns: a list of 2-item lists or tuples, never shared with a caller
    _turns: Sequence[Sequence[str]]
    metadata: dict[str, Any]

    def __init__(
        self,
        turns: Iterable[Union[Turn, Sequence[str], Mapping[str, str]]] = (),
        metadata: Optional[Mapping[str, Any]] = None,
    ) -> None:
        if isinstance(turns, (str, bytes)) or not isinstance(turns, Iterable):
            raise TypeError("StringThread: turns must be a list of (role, content) pairs")
        self._turns = [_turn(t, i) for i, t in enumerate(turns)]
        if metadata is None:
            self.metadata = {}
        elif isinstance(metadata, Mapping):
            self.metadata = dict(metadata)
        else:
            raise TypeError(f"StringThread: metadata must be a dict, got {type(metadata).__name__}")

    @classmethod
    def _adopt(cls, turns: Sequence[Sequence[str]], metadata: dict[str, Any]) -> StringThread:
        """A thread over turns and metadata the caller built, checked and no longer holds."""
        thread = _new(cls)
        thread._turns = turns
        thread.metadata = metadata
        return thread

    # --- reading ------------------------------------------------------------------------

    def completion(self) -> Optional[str]:
        """Content of the last turn if it is an assistant turn, else None."""
        turns = self._turns
        if turns:
            last = turns[-1]
            if last[0] == "assistant":
                return last[1]
        return None

    def last_content(self) -> Optional[str]:
        """Content of the last turn, whatever its role; None for an empty thread."""
        turns = self._turns
        return turns[-1][1] if turns else None

    def get_turns(self) -> list[Turn]:
        """Every turn as a (role, content) tuple (a new list: changing it changes nothing)."""
        return [(t[0], t[1]) for t in self._turns]

    def turns(self) -> list[Turn]:
        """The same as get_turns()."""
        return [(t[0], t[1]) for t in self._turns]

    def messages(self) -> list[Turn]:
        """Every turn except a final assistant turn: the prompt the completion answered."""
        turns = self._turns
        end = len(turns) - 1 if turns and turns[-1][0] == "assistant" else len(turns)
        return [(t[0], t[1]) for t in turns[:end]]

    def to_dict(self) -> dict[str, Any]:
        """The thread as it travels over HTTP: {"turns": [{"role", "content"}], "metadata"}."""
        return {"turns": [{"role": t[0], "content": t[1]} for t in self._turns], "metadata": self.metadata}

    # --- building (each returns a new thread) -------------------------------------------

    def _with(self, role: str, content: str) -> StringThread:
        if not isinstance(content, str):
            raise TypeError(f"StringThread.{role}: content must be a str, got {type(content).__name__}")
        turns = [(t[0], t[1]) for t in self._turns]
        turns.append((role, str(content)))
        return StringThread._adopt(turns, dict(self.metadata))

    def system(self, content: str) -> StringThread:
        return self._with("system", content)

    def user(self, content: str) -> StringThread:
        return self._with("user", content)

    def assistant(self, content: str) -> StringThread:
        return self._with("assistant", content)

    def tool(self, content: str) -> StringThread:
        return self._with("tool", content)

    def with_metadata(self, metadata: Mapping[str, Any]) -> StringThread:
        """The same turns with this metadata (a copy) instead of the thread's."""
        if not isinstance(metadata, Mapping):
            raise TypeError(f"StringThread.with_metadata: metadata must be a dict, got {type(metadata).__name__}")
        return StringThread._adopt([(t[0], t[1]) for t in self._turns], dict(metadata))

    # --- the rest -----------------------------------------------------------------------

    def __len__(self) -> int:
        return len(self._turns)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StringThread):
            return NotImplemented
        return self.get_turns() == other.get_turns() and self.metadata == other.metadata

    __hash__ = None  # type: ignore[assignment]  # metadata is a mutable dict

    def __repr__(self) -> str:
        return f"StringThread({self.get_turns()!r}, metadata={self.metadata!r})"


__all__ = ["MAX_ROLE_LENGTH", "ROLES", "KnownRole", "Role", "StringThread", "Turn", "is_role"]
