"""OpenAI Chat Completions (``/v1/chat/completions``: opencode, pi, tbflow-agent, declared CLIs)."""

from __future__ import annotations

from typing import Any

from tasks_lib.trajectory.call_parts import Call, Item, Turn, arguments_of, count, dig, text_of

#: ``prompt_tokens`` counts cached tokens among them
PROMPT_INCLUDES_CACHE = True
_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant", "tool": "tool",
          "function": "tool"}


def items(request: dict) -> list[Item]:
    found = []
    for m in request.get("messages") or []:
        if isinstance(m, dict) and m.get("role") in _ROLES:
            role = _ROLES[m["role"]]
            call_id = (m.get("tool_call_id") or m.get("name")) if role == "tool" else None
            found.append(Item(role, text_of(m.get("content")), call_id))  # type: ignore[arg-type]
    return found


def turn(reply: Any) -> Turn:
    message = dig((reply.get("choices") or [{}])[0] if isinstance(reply, dict) else {}, "message") or {}
    calls = [Call(str(c.get("id") or ""), str(dig(c, "function", "name") or ""),
                  arguments_of(dig(c, "function", "arguments")))
             for c in message.get("tool_calls") or [] if isinstance(c, dict)]
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return Turn(message=text_of(message.get("content")), reasoning=reasoning if isinstance(reasoning, str) else None,
                calls=calls, model=reply.get("model") if isinstance(reply, dict) else None,
                cache_read=count(dig(reply, "usage", "prompt_tokens_details", "cached_tokens")))
