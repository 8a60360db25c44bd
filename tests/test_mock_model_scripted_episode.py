"""The mock replays the scripted episode statelessly for each CLI's request shape: a shell tool is
called with arguments that follow the tool's schema (codex ``exec_command.cmd``, claude ``Bash``
with ``description``, an array-typed ``command``), a tool result in the history gets the final
text, a request without a shell tool gets the side text; streams are well-formed and carry the
usage of their reply kind, the same as the JSON form."""

import json

import httpx
import pytest

from gateway_helpers import APIS
from mock_model import MockModel, USAGE, decide
from tasks_lib.gateway.gateway_usage import SseUsageParser, TokenCount, usage_from_json


@pytest.fixture(scope="module")
def mock():
    with MockModel("touch /app/x") as m:
        yield m


def test_arguments_follow_the_tool_schema():
    codex = decide("responses", {"tools": [{"type": "function", "name": "exec_command", "parameters": {
        "type": "object", "properties": {"cmd": {"type": "string"}, "workdir": {"type": "string"},
                                         "yield_time_ms": {"type": "integer"}}, "required": ["cmd", "yield_time_ms"]}}]},
        "ls", "f", "s")
    assert (codex.kind, codex.tool_name, codex.arguments) == ("tool", "exec_command", {"cmd": "ls", "yield_time_ms": 0})
    claude = decide("anthropic", {"tools": [{"name": "Read", "input_schema": {}}, {"name": "Bash", "input_schema": {
        "type": "object", "properties": {"command": {"type": "string"}, "description": {"type": "string"},
                                         "run_in_background": {"type": "boolean"}}, "required": ["command"]}}]},
        "ls", "f", "s")
    assert claude.tool_name == "Bash"
    assert claude.arguments == {"command": "ls", "description": "Run the scripted command"}
    array = decide("chat", {"tools": [{"type": "function", "function": {"name": "shell", "parameters": {
        "type": "object", "properties": {"command": {"type": "array"}}}}}]}, "ls", "f", "s")
    assert array.arguments == {"command": ["bash", "-lc", "ls"]}


def test_preference_order_and_history_decide_the_reply():
    tools = [{"name": "bash"}, {"name": "exec_command"}]
    assert decide("anthropic", {"tools": tools}, "c", "f", "s").tool_name == "exec_command"
    assert decide("chat", {"tools": [{"type": "function", "function": {"name": "read"}}]}, "c", "f", "s").kind == "side"
    with_result = {"tools": tools, "input": [{"type": "custom_tool_call_output", "output": "x"}]}
    assert decide("responses", with_result, "c", "f", "s").kind == "final"


@pytest.mark.parametrize("turn,kind", [("tool", "tool"), ("final", "final")])
@pytest.mark.parametrize("api", APIS, ids=lambda a: a.name)
def test_stream_and_json_carry_the_same_reply_and_usage(mock, api, turn, kind):
    with httpx.Client(base_url=mock.base_url) as client:
        whole = client.post(api.path, json=api.body(turn, False))
        stream = client.post(api.path, json=api.body(turn, True))
    assert stream.headers["content-type"] == "text/event-stream"
    parser = SseUsageParser()
    parser.feed(stream.content)
    expected = TokenCount(*USAGE[kind])
    assert usage_from_json(whole.content) == parser.result() == expected
    events = [json.loads(line[6:]) for line in stream.text.splitlines()
              if line.startswith("data: ") and line != "data: [DONE]"]
    if api.name == "responses":
        assert [e["sequence_number"] for e in events] == list(range(len(events)))
        assert events[-1]["type"] == "response.completed"
        item, whole_item = events[-1]["response"]["output"][0], whole.json()["output"][0]
        assert item["type"] == whole_item["type"] == ("function_call" if kind == "tool" else "message")
    if api.name == "chat":
        assert stream.text.endswith("data: [DONE]\n\n") and events[-1]["choices"] == []
    if api.name == "anthropic":
        assert [e["type"] for e in events][::5] == ["message_start", "message_stop"]
        assert "event: message_delta\n" in stream.text
    if kind == "tool":
        assert "touch /app/x" in whole.text and "touch /app/x" in stream.text


def test_models_and_count_tokens(mock):
    with httpx.Client(base_url=f"{mock.base_url}/any/prefix") as client:
        models = client.get("/v1/models").json()
        count = client.post("/v1/messages/count_tokens?beta=true", json={"messages": [{"content": "x" * 400}]}).json()
    assert set(models["data"][0]) == {"id", "object", "created", "owned_by", "type", "display_name", "created_at"}
    assert count["input_tokens"] >= 100
