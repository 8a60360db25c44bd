"""A mock model behind a real model gateway, and requests shaped like the CLIs' (one per API).

Tests reach the gateway exactly as the in-container relay does: HTTP over its unix socket.
The "real" keys here are fakes, but distinctive, so a leak is found by a plain substring search.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import httpx
import pytest

from mock_model import MockModel
from tasks_lib.gateway.gateway_limits import GatewayLimits
from tasks_lib.gateway.model_gateway import ModelGateway, UpstreamConfig

OPENAI_KEY = "sk-proj-REALOPENAIKEY-1f2e3d4c5b6a79880"
ANTHROPIC_KEY = "sk-ant-api03-REALANTHROPICKEY-0a9b8c7d6e5f"
GEMINI_KEY = "AIzaSy-REALGEMINIKEY-7c6b5a4f3e2d1"
COMMAND = "echo hi > /app/done.txt"
FINAL_TEXT = "All done, the file is written."

SHELL_SCHEMA = {"type": "object", "properties": {"command": {"type": "string"}, "timeout": {"type": "number"}},
                "required": ["command"]}


@dataclass(frozen=True)
class Api:
    """How one wire API is called: path, how the token is sent, a tool turn and a final turn."""

    name: str
    path: str
    family: str

    def headers(self, token: str | None) -> dict[str, str]:
        if self.family == "gemini":
            return {"x-goog-api-key": token} if token else {}
        if self.family == "anthropic":
            base = {"anthropic-version": "2023-06-01"}
            return base | ({"x-api-key": token} if token else {})
        return {"Authorization": f"Bearer {token}"} if token else {}

    def body(self, turn: str, stream: bool) -> dict:
        """``turn`` is "tool" (a shell tool offered, nothing run yet) or "final" (a tool result in history)."""
        if self.family == "gemini":
            contents: list = [{"role": "user", "parts": [{"text": "make the file"}]}]
            if turn == "final":
                contents += [{"role": "model", "parts": [{"functionCall": {"name": "run_shell_command", "args": {}}}]},
                             {"role": "user", "parts": [{"functionResponse": {"name": "run_shell_command",
                                                                              "response": {"output": "ok"}}}]}]
            return {"contents": contents, "tools": [{"functionDeclarations": [
                {"name": "run_shell_command", "parametersJsonSchema": SHELL_SCHEMA}]}]}
        if self.name == "responses":
            items: list = [{"role": "user", "content": "make the file"}]
            if turn == "final":
                items += [{"type": "function_call", "call_id": "call_1", "name": "exec_command", "arguments": "{}"},
                          {"type": "function_call_output", "call_id": "call_1", "output": "ok"}]
            tools = [{"type": "function", "name": "exec_command",
                      "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}, "required": ["cmd"]}}]
            return {"model": "gpt-test", "input": items, "tools": tools, "stream": stream, "store": False}
        if self.name == "chat":
            messages: list = [{"role": "user", "content": "make the file"}]
            if turn == "final":
                messages += [{"role": "assistant", "content": None, "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
                    {"role": "tool", "tool_call_id": "call_1", "content": "ok"}]
            body = {"model": "gpt-test", "messages": messages, "stream": stream,
                    "tools": [{"type": "function", "function": {"name": "bash", "parameters": SHELL_SCHEMA}}]}
            return body | ({"stream_options": {"include_usage": True}} if stream else {})
        messages = [{"role": "user", "content": "make the file"}]
        if turn == "final":
            messages += [{"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Bash",
                                                            "input": {"command": COMMAND}}]},
                         {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_1",
                                                       "content": "ok"}]}]
        return {"model": "claude-test", "max_tokens": 1024, "messages": messages, "stream": stream,
                "tools": [{"name": "Bash", "input_schema": SHELL_SCHEMA}]}


APIS = [Api("responses", "/v1/responses", "openai"), Api("chat", "/v1/chat/completions", "openai"),
        Api("anthropic", "/v1/messages?beta=true", "anthropic")]
#: Gemini's stream is asked for in the path (``:streamGenerateContent?alt=sse``), not the body
GEMINI = Api("gemini", "/v1beta/models/gemini-test:streamGenerateContent?alt=sse", "gemini")
GEMINI_JSON = Api("gemini", "/v1beta/models/gemini-test:generateContent", "gemini")


@dataclass
class Rig:
    mock: MockModel
    gateway: ModelGateway
    socket_path: Path
    log_path: Path

    def client(self, timeout: float = 10.0) -> httpx.Client:
        return httpx.Client(transport=httpx.HTTPTransport(uds=str(self.socket_path)), base_url="http://gateway",
                            timeout=timeout)


def upstream_for(mock: MockModel, prefix: str = "", **extra) -> UpstreamConfig:
    """Every family pointed at ``mock`` (``prefix`` e.g. ``/status/429`` injects failures)."""
    return UpstreamConfig.from_env({
        "TBFLOW_OPENAI_BASE_URL": f"{mock.base_url}{prefix}/v1", "OPENAI_API_KEY": OPENAI_KEY,
        "TBFLOW_ANTHROPIC_BASE_URL": f"{mock.base_url}{prefix}", "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
        "TBFLOW_GEMINI_BASE_URL": f"{mock.base_url}{prefix}", "GEMINI_API_KEY": GEMINI_KEY,
    }).model_copy(update=extra)


@contextlib.contextmanager
def make_rig(tmp_path: Path, prefix: str = "", mock_kwargs: dict | None = None, limits: GatewayLimits | None = None,
             **upstream_extra) -> Iterator[Rig]:
    socket_path, log_path = tmp_path / "gw" / "gw.sock", tmp_path / "gateway.jsonl"
    with MockModel(COMMAND, final_text=FINAL_TEXT, log_path=tmp_path / "mock.jsonl", **(mock_kwargs or {})) as mock:
        gateway = ModelGateway(socket_path, upstream_for(mock, prefix, **upstream_extra), log_path=log_path,
                               limits=limits)
        with gateway:
            yield Rig(mock, gateway, socket_path, log_path)


@pytest.fixture
def rig(tmp_path) -> Iterator[Rig]:
    with make_rig(tmp_path) as r:
        yield r
