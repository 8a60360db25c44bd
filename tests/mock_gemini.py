"""The Gemini API (``generateContent`` / ``streamGenerateContent``) shape of the scripted mock model.

Why a module of its own: ``tests/mock_model.py`` holds the three OpenAI/Anthropic shapes and the
server; the Gemini wire format differs in every part (the model and the method in the path,
``contents``/``parts`` instead of messages, ``functionCall``/``functionResponse`` parts,
``usageMetadata`` instead of ``usage``), so it lives here and the server asks it first.

* ``POST …/v1beta/models/<model>:generateContent`` → one JSON ``GenerateContentResponse``;
  ``…:streamGenerateContent?alt=sse`` → SSE ``data:`` frames (no ``[DONE]``), without ``alt=sse``
  a JSON array of the same chunks; ``…:countTokens`` → ``{"totalTokens": N}``.
* The script is the other APIs' (``mock_model.decide``): a ``functionResponse`` part in the
  history → the final text; else a shell tool among ``tools[].functionDeclarations`` → one
  ``functionCall`` of it; else a side text. Usage is the same per reply kind, as
  ``usageMetadata.{promptTokenCount, candidatesTokenCount, totalTokenCount}`` on the last chunk.
* Errors come in Google's shape: ``{"error": {"code", "message", "status"}}``.
"""

from __future__ import annotations

import json
import re
from typing import Any

GEMINI_PATH = re.compile(r"/v1(?:beta|alpha)?/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")
STATUS_NAMES = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}


def gemini_route(path: str) -> tuple[str, str] | None:
    """(model, method) of a Gemini API path after any fault prefix, else None."""
    at = path.find("/v1beta/")
    at = at if at >= 0 else path.find("/v1alpha/")
    found = GEMINI_PATH.search(path[at:]) if at >= 0 else None
    return (found.group(1), found.group(2)) if found else None


def gemini_error(status: int, message: str) -> dict:
    return {"error": {"code": status, "message": message, "status": STATUS_NAMES.get(status, "UNKNOWN")}}


def as_chat_body(body: dict) -> dict:
    """The request as the mock's common script reads it: tools flattened, tool results as role ``tool``."""
    tools = []
    for group in body.get("tools") or []:
        for decl in (group.get("functionDeclarations") or []) if isinstance(group, dict) else []:
            if isinstance(decl, dict):
                schema = decl.get("parametersJsonSchema") or decl.get("parameters") or {}
                tools.append({"name": decl.get("name"), "parameters": _lower_types(schema)})
    answered = any(isinstance(part, dict) and "functionResponse" in part
                   for content in body.get("contents") or [] if isinstance(content, dict)
                   for part in content.get("parts") or [])
    return {"tools": tools, "messages": [{"role": "tool"}] if answered else []}


def _lower_types(schema: Any) -> Any:
    """Gemini's ``parameters`` spell types in capitals (``STRING``); the script reads JSON Schema's."""
    if isinstance(schema, dict):
        return {k: (v.lower() if k == "type" and isinstance(v, str) else _lower_types(v)) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_lower_types(v) for v in schema]
    return schema


def gemini_reply(reply: Any, model: str, response_id: str) -> tuple[dict, list[dict]]:
    """(whole response, stream chunks) for a ``mock_model.Reply``; the last chunk carries usage."""
    i, o = reply.usage
    usage = {"promptTokenCount": i, "candidatesTokenCount": o, "totalTokenCount": i + o}
    if reply.tool_name:
        parts = [{"functionCall": {"name": reply.tool_name, "args": reply.arguments}}]
    else:
        parts = [{"text": reply.text}]
    base = {"modelVersion": model, "responseId": response_id}
    whole = dict(base, candidates=[{"content": {"role": "model", "parts": parts}, "finishReason": "STOP",
                                    "index": 0}], usageMetadata=usage)
    return whole, [whole]


def sse_frames(chunks: list[dict]) -> list[str]:
    return [f"data: {json.dumps(c)}\r\n\r\n" for c in chunks]
