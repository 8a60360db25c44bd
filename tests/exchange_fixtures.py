"""Two-turn model exchanges in each API's wire format (a shell tool call, then the final text),
recorded through tbflow's real ``ExchangeRecorder``: input for the trajectory tests.

The replies are the mock model's own (``tests/mock_model.py``, ``tests/mock_gemini.py``), streamed
as SSE so the recorder's reassembly is exercised; requests are what each API's clients send.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

from mock_gemini import gemini_reply
from mock_model import Reply, anthropic_reply, chat_reply, responses_reply

from tasks_lib.gateway.exchange.exchange_recorder import ExchangeRecorder
from tasks_lib.gateway.gateway_http import Outcome
from tasks_lib.gateway.gateway_usage import GatewayUsage, TokenCount

SYSTEM, TASK, COMMAND, OUTPUT, FINAL = "You are an agent.", "Create done.txt", "echo hi > done.txt", "hi-output", "done"
PATHS = {"openai-chat": "/v1/chat/completions", "openai-responses": "/v1/responses",
         "anthropic-messages": "/v1/messages", "gemini-generate-content": "/v1beta/models/gem-x:streamGenerateContent"}
APIS = tuple(PATHS)




def _sse(events: list[dict]) -> bytes:
    return "".join(f"data: {json.dumps(e)}\n\n" for e in events).encode()


def _reply(api: str, r: Reply) -> tuple[dict, list[dict]]:
    if api == "openai-chat":
        return chat_reply(r, "gpt-4o")
    if api == "openai-responses":
        return responses_reply(r, "gpt-5")
    if api == "anthropic-messages":
        return anthropic_reply(r, "claude-haiku-4-5")
    return gemini_reply(r, "gemini-2.5-flash", "resp-1")


def _first_request(api: str) -> dict:
    tool = {"name": "bash", "parameters": {"type": "object", "properties": {"command": {"type": "string"}}}}
    if api == "openai-chat":
        return {"model": "gpt-4o", "stream": True, "tools": [{"type": "function", "function": tool}],
                "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": TASK}]}
    if api == "openai-responses":
        return {"model": "gpt-5", "stream": True, "instructions": SYSTEM, "tools": [dict(tool, type="function")],
                "input": [{"type": "message", "role": "user", "content": [{"type": "input_text", "text": TASK}]}]}
    if api == "anthropic-messages":
        return {"model": "claude-haiku-4-5", "stream": True, "system": [{"type": "text", "text": SYSTEM}],
                "tools": [{"name": "bash", "input_schema": tool["parameters"]}],
                "messages": [{"role": "user", "content": [{"type": "text", "text": TASK}]}]}
    return {"systemInstruction": {"parts": [{"text": SYSTEM}]},
            "tools": [{"functionDeclarations": [tool]}], "contents": [{"role": "user", "parts": [{"text": TASK}]}]}


def _continued(api: str, first: dict, call_reply: dict) -> dict:
    """The second request: the first one's history + the model's call + the tool's output."""
    body = json.loads(json.dumps(first))
    if api == "openai-chat":
        message = call_reply["choices"][0]["message"]
        body["messages"] += [message, {"role": "tool", "tool_call_id": message["tool_calls"][0]["id"],
                                       "content": OUTPUT}]
    elif api == "openai-responses":
        call = call_reply["output"][0]
        body["input"] += [call, {"type": "function_call_output", "call_id": call["call_id"], "output": OUTPUT}]
    elif api == "anthropic-messages":
        block = call_reply["content"][0]
        body["messages"] += [{"role": "assistant", "content": call_reply["content"]},
                             {"role": "user", "content": [{"type": "tool_result", "tool_use_id": block["id"],
                                                           "content": [{"type": "text", "text": OUTPUT}]}]}]
    else:
        call = call_reply["candidates"][0]["content"]
        name = call["parts"][0]["functionCall"]["name"]  # the mock's call has no id; gemini-cli sends its own
        body["contents"] += [call, {"role": "user", "parts": [{"functionResponse": {
            "id": f"{name}-1700000000000-abc", "name": name, "response": {"output": OUTPUT}}}]}]
    return body


def call_id_of(api: str, call_reply: dict) -> str:
    if api == "openai-chat":
        return call_reply["choices"][0]["message"]["tool_calls"][0]["id"]
    if api == "openai-responses":
        return call_reply["output"][0]["call_id"]
    if api == "anthropic-messages":
        return call_reply["content"][0]["id"]
    return call_reply["candidates"][0]["content"]["parts"][0]["functionCall"]["name"]


def record_two_turns(api: str, path: Path) -> tuple[GatewayUsage, str]:
    """Record the exchange of ``api`` to ``path``; (the usage the gateway would have counted, the call id)."""
    recorder, usage = ExchangeRecorder(lambda text: text), GatewayUsage()
    recorder.start("t", path)
    first = _first_request(api)
    call_body, call_events = _reply(api, Reply("tool", tool_name="bash", arguments={"command": COMMAND}))
    final_body, final_events = _reply(api, Reply("final", text=FINAL))
    for request, events, kind in ((first, call_events, "tool"), (_continued(api, first, call_body), final_events,
                                                                  "final")):
        tokens = TokenCount(*Reply(kind).usage)
        usage.add(200, tokens, None)
        recorder.record("t", "POST", PATHS[api], booked(tokens, json.dumps(request).encode(), _sse(events)),
                        time.monotonic())
    recorder.stop("t")
    return usage, call_id_of(api, call_body)


def booked(tokens: TokenCount, request: bytes, reply: bytes) -> Outcome:
    """A streamed 200 as the gateway books it."""
    out = Outcome()
    out.status, out.tokens, out.request, out.reply, out.sse = 200, tokens, request, reply, True
    return out
