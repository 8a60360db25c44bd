"""OpenAI Responses (``/v1/responses``: codex). ``instructions`` is the system text; ``input`` the
history of messages, function calls and their ``*_output`` items; the reply's ``output`` holds
reasoning, messages and calls."""

from __future__ import annotations

from typing import Any

from tasks_lib.trajectory.call_parts import Call, Item, Turn, arguments_of, count, dig, text_of

PROMPT_INCLUDES_CACHE = True
_CALLS = ("function_call", "custom_tool_call", "local_shell_call")


def items(request: dict) -> list[Item]:
    found = [Item("system", request["instructions"])] if isinstance(request.get("instructions"), str) else []
    history = request.get("input")
    if isinstance(history, str):
        return found + [Item("user", history)]
    for item in history if isinstance(history, list) else []:
        if not isinstance(item, dict):
            continue
        kind = item.get("type") or "message"
        if kind == "message":
            role = {"developer": "system", "system": "system", "user": "user"}.get(str(item.get("role")), "assistant")
            found.append(Item(role, text_of(item.get("content"))))  # type: ignore[arg-type]
        elif kind.endswith("_output"):
            found.append(Item("tool", text_of(item.get("output")), item.get("call_id")))
        else:  # the model's own earlier calls and reasoning, sent back
            found.append(Item("assistant", str(item.get("call_id") or item.get("id") or kind)))
    return found


def turn(reply: Any) -> Turn:
    out = Turn(model=reply.get("model") if isinstance(reply, dict) else None,
               cache_read=count(dig(reply, "usage", "input_tokens_details", "cached_tokens")))
    texts, thoughts = [], []
    for item in (reply.get("output") if isinstance(reply, dict) else None) or []:
        kind = item.get("type") if isinstance(item, dict) else None
        if kind == "message":
            texts.append(text_of(item.get("content")))
        elif kind == "reasoning":
            thoughts.append(text_of(item.get("summary") or item.get("content") or []))
        elif kind in _CALLS:
            args = item.get("arguments", item.get("input", item.get("action")))
            out.calls.append(Call(str(item.get("call_id") or item.get("id") or ""),
                                  str(item.get("name") or kind), arguments_of(args)))
    out.message = "\n".join(t for t in texts if t)
    out.reasoning = "\n".join(t for t in thoughts if t) or None
    return out
