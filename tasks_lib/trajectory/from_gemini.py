"""Gemini ``generateContent`` / ``streamGenerateContent`` (declared CLIs on Google's API).

``systemInstruction`` is the system text; ``contents`` the history, where ``functionResponse``
parts answer ``functionCall`` parts. Gemini's calls carry an ``id`` only sometimes: without one, a
call and its response are linked by the function's name.
"""

from __future__ import annotations

import json
from typing import Any

from tasks_lib.gateway.exchange.sse_reassembly import reassemble
from tasks_lib.trajectory.call_parts import Call, Item, Turn, count, dig, text_of

PROMPT_INCLUDES_CACHE = True


def items(request: dict) -> list[Item]:
    found = []
    if isinstance(request.get("systemInstruction"), dict):
        found.append(Item("system", text_of(request["systemInstruction"].get("parts"))))
    for content in request.get("contents") or []:
        if not isinstance(content, dict):
            continue
        if content.get("role") == "model":
            found.append(Item("assistant", text_of(content.get("parts"))))
            continue
        for part in content.get("parts") or []:
            response = part.get("functionResponse") if isinstance(part, dict) else None
            if isinstance(response, dict):
                found.append(Item("tool", _response_text(response.get("response")),
                                  response.get("id") or response.get("name"), response.get("name")))
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                found.append(Item("user", part["text"]))
    return found


def turn(reply: Any) -> Turn:
    if isinstance(reply, list):  # a stream as one JSON array: its chunks, merged
        reply = reassemble("gemini-generate-content", [c for c in reply if isinstance(c, dict)])
    reply = reply if isinstance(reply, dict) else {}
    out = Turn(model=reply.get("modelVersion"), cache_read=count(dig(reply, "usageMetadata", "cachedContentTokenCount")))
    texts: list[str] = []
    thoughts: list[str] = []
    for part in dig((reply.get("candidates") or [{}])[0], "content", "parts") or []:
        if not isinstance(part, dict):
            continue
        if isinstance(part.get("functionCall"), dict):
            fc = part["functionCall"]
            args = fc.get("args")
            out.calls.append(Call(str(fc.get("id") or fc.get("name") or ""), str(fc.get("name") or ""),
                                  args if isinstance(args, dict) else {}))
        elif isinstance(part.get("text"), str):
            (thoughts if part.get("thought") else texts).append(part["text"])
    out.message, out.reasoning = "".join(texts), "".join(thoughts) or None
    return out


def _response_text(response: Any) -> str:
    """A ``functionResponse.response`` (an object): its ``output``/``result``/``content`` text, else the JSON."""
    if isinstance(response, dict):
        for key in ("output", "result", "content"):
            if isinstance(response.get(key), str):
                return response[key]
        return json.dumps(response)
    return text_of(response)
