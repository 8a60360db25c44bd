"""The persisted shape of one recorded model call, and which API a route speaks.

Why its own module: the recorder writes these lines, the reader and the trajectory converters
read them; neither should know the other's code. One line of ``model-exchange.jsonl`` per
request the gateway booked for the trial, in booking order.

A request body is stored as a *delta* (``history_delta``): its history list holds only the items
after the first ``history.keep`` items of request ``history.base``, and the top-level keys named in
``unchanged`` are the base's. The reply is stored whole, a stream already reassembled into the
API's non-streaming JSON shape (``sse_reassembly``). A body that does not parse is kept as its
exact bytes, with the reason (``exchange_json``). Headers are never stored: they carry keys.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel

#: the file under the trial's host directory (never one the agent writes or that is mounted)
EXCHANGE_FILE = "model-exchange.jsonl"
EXCHANGE_SCHEMA = 1

Api = Literal["openai-chat", "openai-responses", "anthropic-messages", "gemini-generate-content", "other"]
#: the list field that holds the conversation in each API's request
HISTORY_FIELD: dict[str, str] = {"openai-chat": "messages", "openai-responses": "input",
                                 "anthropic-messages": "messages", "gemini-generate-content": "contents"}
_GEMINI_CALL = re.compile(r":(generateContent|streamGenerateContent)$")


def api_of(path: str) -> Api:
    """The API a forwarded route speaks (the query string is not part of ``path``'s match)."""
    route = path.split("?", 1)[0]
    if route.endswith("/chat/completions"):
        return "openai-chat"
    if route.endswith("/responses"):
        return "openai-responses"
    if route.endswith("/messages"):
        return "anthropic-messages"
    if _GEMINI_CALL.search(route):
        return "gemini-generate-content"
    return "other"


class HistoryRef(BaseModel):
    """What a stored request leaves to request ``base``: the keys named in the entry's ``unchanged``
    and, when ``field`` is set, the first ``keep`` items of that history list."""

    base: int
    field: str | None = None
    keep: int = 0
    #: the request's top-level key order, when it is not the stored keys after the unchanged ones
    order: list[str] | None = None


class ExchangeEntry(BaseModel):
    """One request and its reply, as booked by the gateway."""

    format_version: int = EXCHANGE_SCHEMA
    seq: int
    started: datetime
    ms: float
    method: str
    path: str
    api: Api
    status: int
    input_tokens: int | None = None
    output_tokens: int | None = None
    error: str | None = None
    stream: bool = False
    #: the JSON request body (a delta, see the module docstring); None when it did not parse
    request: Any = None
    #: a request body that did not parse, as its exact bytes (``exchange_json.raw_bytes``), and why
    request_text: str | None = None
    request_unparsed: str | None = None
    history: HistoryRef | None = None
    unchanged: list[str] = []
    #: the reply as the API's non-streaming JSON (a stream reassembled); None when it did not parse
    reply: Any = None
    reply_text: str | None = None
    reply_unparsed: str | None = None
    #: the trial's recording went over its byte budget: bodies left out from here on
    truncated: bool = False
    #: the bodies could not be recorded (a bug met on an odd body): only status, timing and tokens
    unrecorded: str | None = None
