"""The thread formats people already have, as Gradebox threads ({"turns", "metadata"}): OpenAI chat
messages (and chat lines ``{"messages": […], …}``) and TRL's datasets, standard (``{"prompt": "…",
"completion": "…"}``) and conversational (lists of ``{"role", "content"}``). The rules are the
TypeScript SDK's (sdk/thread-formats.ts), so a line reads the same in Python, in ``gradebox grade
--threads`` and in the console:

* OpenAI's ``developer`` role is ``system``, ``function`` is ``tool``; other roles are refused.
* content: a string as it is; a list of content parts as its text parts (``text``,
  ``input_text``, ``output_text``) joined by line breaks (images and audio are not graded);
  None (an assistant message that only calls tools) as "".
* A line's other columns become the thread's metadata (or ``metadata_columns``, exactly those).

Bad input raises ThreadFormatError (a ValueError) saying which field is wrong and why."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, cast

from .thread import is_role
from .types import Thread, Turn

__all__ = [
    "ROLE_ALIASES",
    "ThreadFormat",
    "ThreadFormatError",
    "from_messages",
    "from_openai",
    "from_trl",
    "message_turns",
    "read_thread",
]

ThreadFormat = Literal["gradebox", "openai", "trl-standard", "trl-conversational"]

#: roles of OpenAI's chat format that Gradebox names otherwise
ROLE_ALIASES: dict[str, str] = {"developer": "system", "function": "tool"}

_TEXT_PARTS = ("text", "input_text", "output_text")
ACCEPTED_FORMATS = (
    'a Gradebox thread {"turns": [{"role", "content"}], "metadata"?}, an OpenAI chat line {"messages": [{"role", "content"}], …}, '
    'or a TRL line {"prompt", "completion", …}: strings (standard) or lists of {"role", "content"} (conversational)'
)


class ThreadFormatError(ValueError):
    """A value is not a thread in any accepted format; the message says why."""


def content_text(content: object, where: str) -> str:
    """A message's content as one string (see the module's rules)."""
    if isinstance(content, str):
        return content
    if content is None:
        return ""
    if isinstance(content, Sequence) and not isinstance(content, (bytes, bytearray)):
        texts: list[str] = []
        for part in content:
            if part is None or isinstance(part, (str, bytes, int, float, Sequence)):
                raise ThreadFormatError(f"{where}.content must be a string or a list of content parts; a part is {type(part).__name__}")
            text = _field(part, "text")
            if isinstance(text, str) and _field(part, "type") in _TEXT_PARTS:
                texts.append(text)
        return "\n".join(texts)
    raise ThreadFormatError(f"{where}.content must be a string or a list of content parts, not {type(content).__name__}")


def _field(message: object, name: str) -> object:
    """A message's field: a dict's key, or an object's attribute (pydantic messages)."""
    if isinstance(message, Mapping):
        return message.get(name)
    return getattr(message, name, None)


def message_turns(messages: object, field: str = "messages") -> list[Turn]:
    """A list of chat messages (dicts, or objects with ``role`` and ``content``) as turns."""
    if isinstance(messages, Mapping) or isinstance(messages, str) or not isinstance(messages, Sequence) or len(messages) == 0:
        raise ThreadFormatError(f'{field} must be a non-empty list of {{"role", "content"}}')
    turns: list[Turn] = []
    for i, message in enumerate(messages):
        where = f"{field}[{i}]"
        if message is None or isinstance(message, (str, bytes, int, float, Sequence)):
            raise ThreadFormatError(f'{where} must be an object {{"role", "content"}}, not {type(message).__name__}')
        raw_role = _field(message, "role")
        role = ROLE_ALIASES.get(raw_role, raw_role) if isinstance(raw_role, str) else raw_role
        if not is_role(role):
            raise ThreadFormatError(f"{where}.role must be 1 to 64 characters without control characters; it is {raw_role!r}")
        turns.append(cast(Turn, {"role": role, "content": content_text(_field(message, "content"), where)}))
    return turns


def from_messages(messages: object, metadata: Mapping[str, Any] | None = None) -> Thread:
    """OpenAI chat messages (``[{"role", "content"}, …]``) as a thread."""
    return {"turns": message_turns(messages), "metadata": dict(metadata or {})}


def _metadata(line: Mapping[str, Any], own: tuple[str, ...], metadata_columns: Sequence[str] | None) -> dict[str, Any]:
    columns = [k for k in line if k not in own] if metadata_columns is None else list(metadata_columns)
    return {c: line[c] for c in columns if c in line}


def from_openai(line: Mapping[str, Any], *, metadata_columns: Sequence[str] | None = None) -> Thread:
    """An OpenAI chat line (``{"messages": […], …}``, as in fine-tuning files) as a thread: the
    messages are its turns, the other columns its metadata."""
    if not isinstance(line, Mapping) or "messages" not in line:
        raise ThreadFormatError('an OpenAI chat line is an object {"messages": [{"role", "content"}], …}')
    return {"turns": message_turns(line["messages"]), "metadata": _metadata(line, ("messages",), metadata_columns)}


def from_trl(
    prompt: object,
    completion: object,
    metadata: Mapping[str, Any] | None = None,
) -> Thread:
    """A TRL sample as a thread: standard (``prompt`` and ``completion`` strings: a user turn and
    an assistant turn) or conversational (both lists of messages: their turns in order)."""
    if isinstance(prompt, str) and isinstance(completion, str):
        turns: list[Turn] = [{"role": "user", "content": prompt}, {"role": "assistant", "content": completion}]
        return {"turns": turns, "metadata": dict(metadata or {})}
    if isinstance(prompt, Sequence) and not isinstance(prompt, str) and isinstance(completion, Sequence) and not isinstance(completion, str):
        return {"turns": [*message_turns(prompt, "prompt"), *message_turns(completion, "completion")], "metadata": dict(metadata or {})}
    raise ThreadFormatError(
        'a TRL sample\'s "prompt" and "completion" must both be strings (standard) or both lists of {"role", "content"} (conversational)'
    )


def _gradebox_problem(line: Mapping[str, Any]) -> str | None:
    turns, metadata = line.get("turns"), line.get("metadata")
    if not isinstance(turns, list) or not turns:
        return "turns must be a non-empty array"
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping) or not is_role(turn.get("role")):
            return f"turns[{i}].role must be 1 to 64 characters without control characters"
        if not isinstance(turn.get("content"), str):
            return f"turns[{i}].content must be a string"
    if metadata is not None and not isinstance(metadata, Mapping):
        return "metadata must be an object"
    return None


def read_thread(line: object, *, metadata_columns: Sequence[str] | None = None) -> tuple[ThreadFormat, Thread]:
    """One parsed JSON line (a dict) in whichever accepted format it is: its format and its
    thread. ThreadFormatError says why a line is none."""
    if not isinstance(line, Mapping):
        raise ThreadFormatError(f"not a JSON object; a line must be {ACCEPTED_FORMATS}")
    if "turns" in line:
        problem = _gradebox_problem(line)
        if problem:
            raise ThreadFormatError(problem)
        return "gradebox", cast(Thread, dict(line))
    if "messages" in line:
        return "openai", from_openai(line, metadata_columns=metadata_columns)
    if "prompt" in line or "completion" in line:
        if "prompt" not in line or "completion" not in line:
            raise ThreadFormatError(
                f'a TRL line needs both "prompt" and "completion" (a prompt alone has nothing to grade); a line must be {ACCEPTED_FORMATS}'
            )
        prompt, completion = line["prompt"], line["completion"]
        thread = from_trl(prompt, completion, _metadata(line, ("prompt", "completion"), metadata_columns))
        return ("trl-standard" if isinstance(prompt, str) else "trl-conversational"), thread
    raise ThreadFormatError(f'no "turns", "messages" or "prompt" and "completion": a line must be {ACCEPTED_FORMATS}')
