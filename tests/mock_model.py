"""A scripted mock model server: OpenAI Responses, Chat Completions, Anthropic Messages and Gemini.

Why it exists: harness and gateway tests need a model that behaves like the real APIs (SSE
streams with usage, tool calls, error shapes) but answers instantly, offline and the same way
every time. It follows docs/architecture.md §6:

* Script, decided statelessly per request: a tool result in the history → the final text; else a
  shell tool is offered → one call to it running ``command``; else (a side call such as title
  generation) → plain text. Usage is distinct per reply kind (tool 120/15, final 160/5, side
  30/3) so sums in logs are checkable.
* ``POST …/v1/responses``, ``…/v1/chat/completions``, ``…/v1/messages``,
  ``…/v1/messages/count_tokens``, ``GET …/v1/models``; any prefix before ``/v1``, query ignored;
  streaming when ``stream`` is true, the equivalent JSON object otherwise. The Gemini API's
  ``…/v1beta/models/<model>:generateContent`` (and ``:streamGenerateContent``, ``:countTokens``)
  is ``tests/mock_gemini.py``.
* Failure injection by path prefix: ``/status/<code>/…`` answers that status in the API's error
  shape (the message echoes the presented key, as real providers echo a masked one: the worst
  case for leak tests); ``/hang/…`` never answers (until ``stop()``). ``hang_on={"final"}``
  hangs only the replies of that kind: the first turn (the tool call) is answered, the second
  never is — a slow second turn.
* Every request is kept in ``requests`` and, with ``log_path``, written as a JSON line
  (method, path with query, headers with lower-cased names, body, and the ``reply`` given).

Loopback only. ``with MockModel(command="echo hi > /app/done.txt") as m: m.base_url``, or
``python tests/mock_model_cli.py --port 8765`` by hand.
"""

from __future__ import annotations

import itertools
import json
import re
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from mock_gemini import as_chat_body, gemini_error, gemini_reply, gemini_route, sse_frames

USAGE = {"tool": (120, 15), "final": (160, 5), "side": (30, 3)}
SHELL_TOOLS = ("exec_command", "shell_command", "shell", "bash", "run_shell_command")
FILLER = {"string": "", "integer": 0, "number": 0, "boolean": False, "array": [], "object": {}}
STATUS_PREFIX = re.compile(r"^/status/(\d{3})(?=/|$)")
_ids = itertools.count(1)


def _id(prefix: str) -> str:
    return f"{prefix}_mock{next(_ids):06d}"


@dataclass
class Reply:
    """What the script answers: a shell tool call, the final text or a side text."""

    kind: str  # "tool" | "final" | "side"
    text: str = ""
    tool_name: str = ""
    arguments: dict | None = None

    @property
    def usage(self) -> tuple[int, int]:
        return USAGE[self.kind]


# -- the script ------------------------------------------------------------------------------

def _has_tool_result(api: str, body: dict) -> bool:
    if api == "responses":
        items = body.get("input") if isinstance(body.get("input"), list) else []
        return any(isinstance(i, dict) and str(i.get("type", "")).endswith("_output") for i in items)
    messages = body.get("messages") or []
    if api == "chat":
        return any(isinstance(m, dict) and m.get("role") == "tool" for m in messages)
    return any(isinstance(m, dict) and isinstance(m.get("content"), list)
               and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in m["content"])
               for m in messages)


def _shell_tool(tools: Any) -> tuple[str, dict] | None:
    found: dict[str, tuple[str, dict]] = {}
    for tool in tools if isinstance(tools, list) else []:
        if not isinstance(tool, dict):
            continue
        fn = tool.get("function") if isinstance(tool.get("function"), dict) else {}
        name = tool.get("name") or fn.get("name")
        schema = tool.get("parameters") or fn.get("parameters") or tool.get("input_schema") or {}
        if isinstance(name, str):
            found.setdefault(name.lower(), (name, schema if isinstance(schema, dict) else {}))
    return next((found[n] for n in SHELL_TOOLS if n in found), None)


def _arguments(schema: dict, command: str) -> dict:
    props = schema.get("properties") or {}
    if not props:
        return {"command": command}
    required = schema.get("required") or []
    args: dict = {}
    for name, spec in props.items():
        typ = spec.get("type") if isinstance(spec, dict) else None
        if isinstance(typ, list):
            typ = next((t for t in typ if t != "null"), "string")
        if name in ("command", "cmd"):
            args[name] = ["bash", "-lc", command] if typ == "array" else command
        elif name == "description":
            args[name] = "Run the scripted command"
        elif name in required:
            args[name] = FILLER.get(typ, "")
    return args


def decide(api: str, body: dict, command: str, final_text: str, side_text: str) -> Reply:
    if _has_tool_result(api, body):
        return Reply("final", text=final_text)
    tool = _shell_tool(body.get("tools"))
    if tool:
        return Reply("tool", tool_name=tool[0], arguments=_arguments(tool[1], command))
    return Reply("side", text=side_text)


# -- reply shapes ----------------------------------------------------------------------------

def responses_reply(r: Reply, model: str) -> tuple[dict, list[dict]]:
    """(JSON body, stream events) for the OpenAI Responses API."""
    i, o = r.usage
    if r.tool_name:
        item = {"type": "function_call", "id": _id("fc"), "call_id": _id("call"), "name": r.tool_name,
                "arguments": json.dumps(r.arguments), "status": "completed"}
        started = dict(item, arguments="", status="in_progress")
        middle = [{"type": "response.function_call_arguments.delta", "item_id": item["id"], "output_index": 0,
                   "delta": item["arguments"]},
                  {"type": "response.function_call_arguments.done", "item_id": item["id"], "output_index": 0,
                   "arguments": item["arguments"]}]
    else:
        part = {"type": "output_text", "text": r.text, "annotations": []}
        item = {"type": "message", "id": _id("msg"), "role": "assistant", "status": "completed", "content": [part]}
        started = dict(item, content=[], status="in_progress")
        at = {"item_id": item["id"], "output_index": 0, "content_index": 0}
        middle = [{"type": "response.content_part.added", **at, "part": dict(part, text="")},
                  {"type": "response.output_text.delta", **at, "delta": r.text},
                  {"type": "response.output_text.done", **at, "text": r.text},
                  {"type": "response.content_part.done", **at, "part": part}]
    base = {"id": _id("resp"), "object": "response", "created_at": int(time.time()), "model": model}
    done = dict(base, status="completed", output=[item], usage={
        "input_tokens": i, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": o,
        "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": i + o})
    running = dict(base, status="in_progress", output=[])
    events = [{"type": "response.created", "response": running},
              {"type": "response.in_progress", "response": running},
              {"type": "response.output_item.added", "output_index": 0, "item": started}, *middle,
              {"type": "response.output_item.done", "output_index": 0, "item": item},
              {"type": "response.completed", "response": done}]
    for n, event in enumerate(events):
        event["sequence_number"] = n
    return done, events


def chat_reply(r: Reply, model: str) -> tuple[dict, list[dict]]:
    """(JSON body, stream chunks) for OpenAI Chat Completions; the last chunk carries usage."""
    i, o = r.usage
    base = {"id": _id("chatcmpl"), "created": int(time.time()), "model": model}
    usage = {"prompt_tokens": i, "completion_tokens": o, "total_tokens": i + o,
             "prompt_tokens_details": {"cached_tokens": 0}, "completion_tokens_details": {"reasoning_tokens": 0}}
    message: dict = {"role": "assistant", "content": r.text or None}
    if r.tool_name:
        call = {"id": _id("call"), "type": "function",
                "function": {"name": r.tool_name, "arguments": json.dumps(r.arguments)}}
        message["tool_calls"] = [call]
        deltas = [{"tool_calls": [{"index": 0, "id": call["id"], "type": "function",
                                   "function": {"name": r.tool_name, "arguments": ""}}]},
                  {"tool_calls": [{"index": 0, "function": {"arguments": call["function"]["arguments"]}}]}]
    else:
        deltas = [{"content": r.text}]
    finish = "tool_calls" if r.tool_name else "stop"
    body = dict(base, object="chat.completion", usage=usage,
                choices=[{"index": 0, "message": message, "finish_reason": finish}])
    chunk = dict(base, object="chat.completion.chunk")

    def choice(delta: dict, reason: str | None = None) -> dict:
        return dict(chunk, choices=[{"index": 0, "delta": delta, "finish_reason": reason}])
    chunks = [choice({"role": "assistant", "content": ""}), *map(choice, deltas), choice({}, finish),
              dict(chunk, choices=[], usage=usage)]
    return body, chunks


def anthropic_reply(r: Reply, model: str) -> tuple[dict, list[dict]]:
    """(JSON body, stream events) for Anthropic Messages."""
    i, o = r.usage
    if r.tool_name:
        block = {"type": "tool_use", "id": _id("toolu"), "name": r.tool_name, "input": r.arguments}
        start, delta = dict(block, input={}), {"type": "input_json_delta", "partial_json": json.dumps(r.arguments)}
    else:
        block = {"type": "text", "text": r.text}
        start, delta = {"type": "text", "text": ""}, {"type": "text_delta", "text": r.text}
    stop = "tool_use" if r.tool_name else "end_turn"
    usage = {"input_tokens": i, "output_tokens": o, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0}
    base = {"id": _id("msg"), "type": "message", "role": "assistant", "model": model}
    body = dict(base, content=[block], stop_reason=stop, stop_sequence=None, usage=usage)
    events = [{"type": "message_start", "message": dict(base, content=[], stop_reason=None, stop_sequence=None,
                                                         usage=dict(usage, output_tokens=1))},
              {"type": "content_block_start", "index": 0, "content_block": start},
              {"type": "content_block_delta", "index": 0, "delta": delta},
              {"type": "content_block_stop", "index": 0},
              {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None}, "usage": usage},
              {"type": "message_stop"}]
    return body, events


ROUTES = {"/responses": ("responses", responses_reply), "/chat/completions": ("chat", chat_reply),
          "/messages": ("anthropic", anthropic_reply)}
ERRORS = {400: ("invalid_request_error", "invalid_request_error", None),
          401: ("authentication_error", "invalid_request_error", "invalid_api_key"),
          403: ("permission_error", "invalid_request_error", None),
          404: ("not_found_error", "invalid_request_error", "unknown_url"),
          429: ("rate_limit_error", "requests", "rate_limit_exceeded"),
          500: ("api_error", "server_error", None), 529: ("overloaded_error", "server_error", None)}


def error_body(status: int, anthropic: bool, message: str) -> dict:
    """An error in the shape the CLI expects: Anthropic's under ``/messages``, else OpenAI's."""
    a_type, o_type, code = ERRORS.get(status, ("api_error", "server_error", None))
    if anthropic:
        return {"type": "error", "error": {"type": a_type, "message": message}}
    return {"error": {"message": message, "type": o_type, "param": None, "code": code}}


# -- the server ------------------------------------------------------------------------------

#: headers a provider sends that describe the account behind the key (and two an SDK acts on)
ACCOUNT_HEADERS = {"openai-organization": "org-mock-account", "openai-project": "proj_mock",
                   "x-ratelimit-limit-requests": "10000", "anthropic-organization-id": "mock-org-id",
                   "set-cookie": "__cf_bm=mock-session", "retry-after": "1", "x-request-id": "req_mock"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # else headers and body in two writes cost a 40 ms delayed ACK
    server: "_Server"

    def log_message(self, format: str, *args: Any) -> None:  # quiet: requests are logged as JSON
        pass

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        mock = self.server.mock
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        path = self.path.split("?", 1)[0]
        try:
            body = json.loads(raw) if raw else {}
        except ValueError:
            body = None
        entry = {"time": time.time(), "method": self.command, "path": self.path,
                 "headers": {k.lower(): v for k, v in self.headers.items()},
                 "body": body if body is not None else raw.decode("utf-8", "replace")}
        anthropic = "/messages" in path
        gemini = gemini_route(path)
        status = STATUS_PREFIX.match(path)
        if path == "/hang" or path.startswith("/hang/"):
            mock.record(dict(entry, reply="hang"))
            mock.stopping.wait(3600)
            self.close_connection = True
            return
        if status:
            code = int(status.group(1))
            key = (self.headers.get("x-api-key") or self.headers.get("x-goog-api-key")
                   or self.headers.get("Authorization", "").removeprefix("Bearer "))
            mock.record(dict(entry, reply=f"status:{code}"))
            message = f"Mock error {code}. Incorrect API key provided: {key}"
            return self._json(code, gemini_error(code, message) if gemini else error_body(code, anthropic, message),
                              {"x-echoed-key": key})
        if gemini and self.command == "POST" and isinstance(body, dict):
            return self._gemini(mock, entry, body, *gemini)
        route = path[path.find("/v1/") + 3:] if "/v1/" in path else None
        if self.command == "GET" and route == "/models":
            mock.record(dict(entry, reply="models"))
            return self._json(200, {"object": "list", "data": [{
                "id": mock.model, "object": "model", "created": 1700000000, "owned_by": "tbflow-mock", "type": "model",
                "display_name": "Mock Model", "created_at": "2023-11-14T22:13:20Z"}]})
        if self.command == "POST" and route == "/messages/count_tokens":
            mock.record(dict(entry, reply="count_tokens"))
            return self._json(200, {"input_tokens": max(1, len(raw) // 4)})
        if self.command != "POST" or route not in ROUTES or not isinstance(body, dict):
            mock.record(dict(entry, reply="status:404" if isinstance(body, dict) else "status:400"))
            code = 404 if isinstance(body, dict) else 400
            return self._json(code, error_body(code, anthropic, f"mock: no route {self.command} {path}"))
        api, shape = ROUTES[route]
        reply = decide(api, body, mock.command, mock.final_text, mock.side_text)
        if self._hangs(mock, entry, reply):
            return
        mock.record(dict(entry, reply=reply.kind))
        whole, events = shape(reply, str(body.get("model") or mock.model))
        if not body.get("stream"):
            return self._json(200, whole)
        frames = [f"data: {json.dumps(e)}\n\n" if api == "chat" else f"event: {e['type']}\ndata: {json.dumps(e)}\n\n"
                  for e in events] + (["data: [DONE]\n\n"] if api == "chat" else [])
        self._stream(mock, frames)

    def _gemini(self, mock: "MockModel", entry: dict, body: dict, model: str, method: str) -> None:
        if method == "countTokens":
            mock.record(dict(entry, reply="count_tokens"))
            return self._json(200, {"totalTokens": max(1, len(json.dumps(body)) // 4)})
        reply = decide("chat", as_chat_body(body), mock.command, mock.final_text, mock.side_text)
        if self._hangs(mock, entry, reply):
            return
        mock.record(dict(entry, reply=reply.kind))
        whole, chunks = gemini_reply(reply, model, _id("resp"))
        if method == "generateContent" or "alt=sse" not in self.path:  # without alt=sse: a JSON array
            return self._json(200, whole if method == "generateContent" else chunks)  # type: ignore[arg-type]
        self._stream(mock, sse_frames(chunks))

    def _hangs(self, mock: "MockModel", entry: dict, reply: Reply) -> bool:
        if reply.kind not in mock.hang_on:
            return False
        mock.record(dict(entry, reply=f"hang:{reply.kind}"))
        mock.stopping.wait(3600)
        self.close_connection = True
        return True

    def _stream(self, mock: "MockModel", frames: list[str]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for frame in frames:
            data = frame.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            if mock.stream_delay:
                time.sleep(mock.stream_delay)
        self.wfile.write(b"0\r\n\r\n")

    def _json(self, status: int, obj: dict, extra: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in (ACCOUNT_HEADERS | (extra or {})).items():  # what a provider tells about the account
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    mock: "MockModel"

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up mid-reply (a CLI killed at its timeout) is normal here: no traceback."""


class MockModel:
    """The mock on 127.0.0.1 in a background thread; a context manager for pytest fixtures.

    ``stream_delay`` sleeps between stream frames, to tell streaming from buffering.
    """

    def __init__(self, command: str = "echo hi > done.txt", *, final_text: str = "done",
                 side_text: str = "Mock title", model: str = "mock-model", log_path: Path | str | None = None,
                 port: int = 0, stream_delay: float = 0.0, hang_on: tuple[str, ...] = ()) -> None:
        self.command, self.final_text, self.side_text, self.model = command, final_text, side_text, model
        self.hang_on = frozenset(hang_on)
        self.log_path = Path(log_path) if log_path else None
        self.port = port
        self.stream_delay = stream_delay
        self.stopping = threading.Event()
        self._lock = threading.Lock()
        self._requests: list[dict] = []
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no ``/v1``: OpenAI clients add it, Anthropic ones do not)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def requests(self) -> list[dict]:
        with self._lock:
            return list(self._requests)

    def record(self, entry: dict) -> None:
        with self._lock:
            self._requests.append(entry)
            if self.log_path:
                with self.log_path.open("a", encoding="utf-8") as fh:
                    fh.write(json.dumps(entry) + "\n")

    def start(self) -> "MockModel":
        self._server = _Server(("127.0.0.1", self.port), _Handler)
        self._server.mock = self
        self.port = self._server.server_address[1]
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="mock-model", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self.stopping.set()  # releases /hang/ requests
        if self._server:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "MockModel":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
