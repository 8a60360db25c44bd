"""Anthropic Messages (``/v1/messages``: claude-code). ``system`` is a string or text blocks; a
user message's ``tool_result`` blocks answer the ``tool_use`` blocks of the reply before it."""

from __future__ import annotations

from typing import Any

from tasks_lib.trajectory.call_parts import Call, Item, Turn, count, dig, text_of

#: ``input_tokens`` leaves out the cache reads and writes, which are priced apart
PROMPT_INCLUDES_CACHE = False


def items(request: dict) -> list[Item]:
    found = [Item("system", text_of(request["system"]))] if request.get("system") else []
    for m in request.get("messages") or []:
        if not isinstance(m, dict):
            continue
        if m.get("role") == "assistant":
            found.append(Item("assistant", text_of(m.get("content"))))
            continue
        content = m.get("content")
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
        for block in blocks if isinstance(blocks, list) else []:
            if isinstance(block, dict) and block.get("type") == "tool_result":
                found.append(Item("tool", text_of(block.get("content")), block.get("tool_use_id")))
            elif isinstance(block, dict) and block.get("type") == "text":
                found.append(Item("user", block.get("text") or ""))
    return found


def turn(reply: Any) -> Turn:
    reply = reply if isinstance(reply, dict) else {}
    out = Turn(model=reply.get("model"), cache_read=count(dig(reply, "usage", "cache_read_input_tokens")),
               cache_write=count(dig(reply, "usage", "cache_creation_input_tokens")),
               cache_write_1h=count(dig(reply, "usage", "cache_creation", "ephemeral_1h_input_tokens")))
    texts, thoughts = [], []
    for block in reply.get("content") or []:
        kind = block.get("type") if isinstance(block, dict) else None
        if kind == "text":
            texts.append(block.get("text") or "")
        elif kind == "thinking":
            thoughts.append(block.get("thinking") or "")
        elif kind in ("tool_use", "server_tool_use"):
            args = block.get("input")
            out.calls.append(Call(str(block.get("id") or ""), str(block.get("name") or ""),
                                  args if isinstance(args, dict) else {"input": args}))
    out.message, out.reasoning = "\n".join(texts), "\n".join(thoughts) or None
    return out
