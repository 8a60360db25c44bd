"""A streamed reply turned back into the API's non-streaming JSON shape, so one reader serves both.

Why: CLIs stream (``stream: true``); a transcript needs the whole message, its reasoning and its
tool calls with their arguments, which a stream spreads over hundreds of deltas. Pure functions
over the recorded bytes, one per API:

* OpenAI Chat: ``choices[].delta`` (``content``, ``reasoning_content``/``reasoning``,
  ``tool_calls[index]`` with ``id``, ``function.name`` and ``function.arguments`` in pieces) →
  ``{"choices": [{"message": ...}], "usage", "model"}``.
* OpenAI Responses: ``response.completed`` (or ``.incomplete``/``.failed``) carries the whole
  response; a cut stream falls back to the ``response.output_item.done`` items seen.
* Anthropic Messages: ``message_start`` + ``content_block_start/delta`` (``text_delta``,
  ``thinking_delta``, ``input_json_delta``) + ``message_delta`` → the message object.
* Gemini: each chunk is a ``GenerateContentResponse``; the parts are concatenated (adjacent text
  merged), the last ``usageMetadata`` kept.
"""

from __future__ import annotations

from typing import Any

from tasks_lib.safe_json import loads_bounded


def sse_events(raw: bytes) -> list[dict]:
    """The JSON objects of a ``text/event-stream`` body's ``data:`` fields (``[DONE]`` and junk skipped)."""
    events: list[dict] = []
    data: list[str] = []
    for line in raw.decode("utf-8", "replace").splitlines() + [""]:
        if line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line and data:
            try:
                obj = loads_bounded("\n".join(data))
            except ValueError:
                obj = None
            if isinstance(obj, dict):
                events.append(obj)
            data = []
    return events


def reassemble(api: str, events: list[dict]) -> dict | None:
    """The non-streaming reply equivalent to ``events``; None for an API without a reassembler."""
    build = {"openai-chat": _chat, "openai-responses": _responses, "anthropic-messages": _anthropic,
             "gemini-generate-content": _gemini}.get(api)
    return build(events) if build else None


def _chat(events: list[dict]) -> dict:
    message: dict[str, Any] = {"role": "assistant", "content": None}
    calls: dict[int, dict] = {}
    out: dict[str, Any] = {"object": "chat.completion"}
    finish = None
    for event in events:
        out.update({k: event[k] for k in ("id", "model", "created") if k in event and k not in out})
        if event.get("usage"):
            out["usage"] = event["usage"]
        for choice in event.get("choices") or []:
            delta = choice.get("delta") if isinstance(choice, dict) else None
            finish = (choice.get("finish_reason") if isinstance(choice, dict) else None) or finish
            if isinstance(delta, dict):
                _chat_delta(message, calls, delta)
    if calls:
        message["tool_calls"] = [calls[i] for i in sorted(calls)]
    out["choices"] = [{"index": 0, "message": message, "finish_reason": finish}]
    return out


def _chat_delta(message: dict, calls: dict[int, dict], delta: dict) -> None:
    for key in ("content", "reasoning_content", "reasoning"):
        if isinstance(delta.get(key), str):
            message[key] = (message.get(key) or "") + delta[key]
    for piece in delta.get("tool_calls") or []:
        if not isinstance(piece, dict):
            continue
        call = calls.setdefault(piece.get("index", len(calls)), {"id": "", "type": "function",
                                                                  "function": {"name": "", "arguments": ""}})
        call["id"] = piece.get("id") or call["id"]
        fn: dict = piece["function"] if isinstance(piece.get("function"), dict) else {}
        call["function"]["name"] += fn.get("name") or ""
        call["function"]["arguments"] += fn.get("arguments") or ""


def _responses(events: list[dict]) -> dict:
    items: list[dict] = []
    for event in events:
        kind = event.get("type", "")
        if kind in ("response.completed", "response.incomplete", "response.failed") and isinstance(
                event.get("response"), dict):
            return event["response"]
        if kind == "response.output_item.done" and isinstance(event.get("item"), dict):
            items.append(event["item"])
    return {"object": "response", "status": "incomplete", "output": items}


def _anthropic(events: list[dict]) -> dict:
    message: dict[str, Any] = {"type": "message", "role": "assistant", "content": []}
    blocks: dict[int, dict] = {}
    partial: dict[int, str] = {}
    for event in events:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            message.update({k: v for k, v in event["message"].items() if k != "content"})
        elif kind == "content_block_start" and isinstance(event.get("content_block"), dict):
            blocks[event.get("index", len(blocks))] = dict(event["content_block"])
        elif kind == "content_block_delta" and isinstance(event.get("delta"), dict):
            _anthropic_delta(blocks.setdefault(event.get("index", 0), {"type": "text", "text": ""}),
                             partial, event.get("index", 0), event["delta"])
        elif kind == "message_delta":
            message.update(event.get("delta") or {})
            if isinstance(event.get("usage"), dict):
                message["usage"] = {**(message.get("usage") or {}), **event["usage"]}
    for index, text in partial.items():
        try:
            blocks[index]["input"] = loads_bounded(text) if text else {}
        except ValueError:
            blocks[index]["input"] = {"_unparsed": text}
    message["content"] = [blocks[i] for i in sorted(blocks)]
    return message


def _anthropic_delta(block: dict, partial: dict[int, str], index: int, delta: dict) -> None:
    kind = delta.get("type")
    if kind == "text_delta":
        block["text"] = block.get("text", "") + (delta.get("text") or "")
    elif kind == "thinking_delta":
        block["thinking"] = block.get("thinking", "") + (delta.get("thinking") or "")
    elif kind == "signature_delta":
        block["signature"] = block.get("signature", "") + (delta.get("signature") or "")
    elif kind == "input_json_delta":
        partial[index] = partial.get(index, "") + (delta.get("partial_json") or "")


def _gemini(events: list[dict]) -> dict:
    parts: list[dict] = []
    out: dict[str, Any] = {}
    for event in events:
        for key in ("modelVersion", "responseId", "usageMetadata"):
            if key in event:
                out[key] = event[key]
        for cand in (event.get("candidates") or [])[:1]:
            content = cand.get("content") if isinstance(cand, dict) else None
            for part in (content or {}).get("parts") or []:
                if not isinstance(part, dict):
                    continue
                last = parts[-1] if parts else None
                if last is not None and _text_only(last) and _text_only(part) and \
                        bool(last.get("thought")) == bool(part.get("thought")):
                    last["text"] += part["text"]
                else:
                    parts.append(dict(part))
    out["candidates"] = [{"content": {"role": "model", "parts": parts}, "index": 0}]
    return out


def _text_only(part: dict) -> bool:
    return isinstance(part.get("text"), str) and not (set(part) - {"text", "thought"})
