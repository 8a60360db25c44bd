"""What every API's request and reply come down to for a trajectory: history items and one turn.

Why: the four wire formats (OpenAI Chat, OpenAI Responses, Anthropic Messages, Gemini) differ in
every name, but a transcript needs the same few things from each: the system and user texts,
the tool results the request carries back (linked to their call ids), and the model's message,
reasoning, tool calls and cache counts. Each ``from_*`` module maps its format onto these; the
trajectory builder knows only these.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from tasks_lib.safe_json import loads_bounded


@dataclass(frozen=True)
class Item:
    """One entry of a request's history: ``tool`` items are results of the call ``call_id`` (or,
    when no call has that id, of the call named by ``call_name``: Gemini's calls may carry no id)."""

    role: Literal["system", "user", "assistant", "tool"]
    text: str
    call_id: str | None = None
    call_name: str | None = None


@dataclass(frozen=True)
class Call:
    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass
class Turn:
    """One reply of the model. Cache counts are None when the API did not report them."""

    message: str = ""
    reasoning: str | None = None
    calls: list[Call] = field(default_factory=list)
    model: str | None = None
    cache_read: int | None = None
    cache_write: int | None = None
    #: of ``cache_write``, the tokens written to a cache kept an hour (Anthropic's ``ephemeral_1h``)
    cache_write_1h: int | None = None


def text_of(content: Any) -> str:
    """The text of a content value: a string, or a list of parts of which the text ones are joined
    (other parts show as ``[type]``, so a reader knows something was there)."""
    if isinstance(content, str):
        return content
    if isinstance(content, dict):
        content = [content]
    if not isinstance(content, list):
        return "" if content is None else json.dumps(content)
    texts = []
    for part in content:
        if isinstance(part, str):
            texts.append(part)
        elif isinstance(part, dict):
            text = part.get("text") if isinstance(part.get("text"), str) else None
            texts.append(text if text is not None else text_of(part["content"]) if "content" in part
                         else f"[{part.get('type', 'part')}]")
    return "\n".join(texts)


def arguments_of(value: Any) -> dict[str, Any]:
    """A tool call's arguments as an object: JSON text parsed; anything else kept under ``input``."""
    if isinstance(value, str):
        try:
            value = loads_bounded(value) if value.strip() else {}
        except ValueError:
            return {"input": value}
    return value if isinstance(value, dict) else {"input": value}


def count(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def dig(obj: Any, *keys: str) -> Any:
    for key in keys:
        obj = obj.get(key) if isinstance(obj, dict) else None
    return obj
