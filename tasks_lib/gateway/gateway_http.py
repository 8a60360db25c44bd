"""The model gateway's HTTP side: one handler thread per connection from a container's relay.

Why separate from ``model_gateway``: this module is the wire protocol (which routes pass, which
headers are dropped, how a reply is streamed through and when it is booked); ``model_gateway``
is the state (trials, tokens, usage) and lifecycle. The handler never holds state of its own
beyond one request and books every request through ``ModelGateway._book`` exactly once.

Streaming: the reply is written to the client chunk by chunk as the upstream sends it (CLIs time
out on buffered SSE), while ``gateway_usage`` reads usage from the same bytes. The request is
booked just *before* the reply's last byte, so a CLI that has its whole reply and exits finds
its request already counted.
"""

from __future__ import annotations

import json
import re
import socketserver
import time
from http.server import BaseHTTPRequestHandler
from typing import Protocol

import httpx

from tasks_lib.gateway.gateway_config import Family, UpstreamConfig
from tasks_lib.gateway.gateway_usage import MAX_PARSE_BYTES, GatewayUsage, SseUsageParser, TokenCount, usage_from_json

_POST_ROUTES = re.compile(r"/(responses|responses/compact|chat/completions|messages|messages/count_tokens)")
_GET_ROUTES = re.compile(r"/models(/[A-Za-z0-9._:@-]+)?")
#: the Gemini API's model calls, matched on the whole path (its version is part of the route)
_GEMINI_ROUTES = re.compile(r"/v1(beta|alpha)?/models/[A-Za-z0-9._@-]+:(generateContent|streamGenerateContent|countTokens)")
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "content-length"}
_DROP_REQUEST = _HOP | {"authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie", "accept-encoding"}
_DROP_RESPONSE = _HOP | {"server", "date"}
MAX_REQUEST_BYTES = 64 * 1024 * 1024
MAX_ERROR_BODY = 1024 * 1024
IDLE_CONNECTION_SEC = 300


def error_body(family: Family, status: int, message: str) -> bytes:
    """A gateway-made error in the shape the CLI parses (Anthropic's, Google's or OpenAI's)."""
    if family == "gemini":
        status_name = {401: "UNAUTHENTICATED", 404: "NOT_FOUND", 413: "INVALID_ARGUMENT", 504: "DEADLINE_EXCEEDED"}
        return json.dumps({"error": {"code": status, "message": message, "status": status_name.get(
            status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")}}).encode()
    if family == "anthropic":
        kind = {401: "authentication_error", 404: "not_found_error", 413: "request_too_large",
                504: "timeout_error"}.get(status, "invalid_request_error" if status < 500 else "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    code = {401: "invalid_api_key", 404: "unknown_url"}.get(status)
    kind = "invalid_request_error" if status < 500 else "server_error"
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


class Outcome:
    """What one forwarded request ended as (filled in by the handler, booked by the gateway)."""

    def __init__(self) -> None:
        self.status = 0
        self.tokens: TokenCount | None = None
        self.error: str | None = None

    def fail(self, status: int, error: str) -> str:
        self.status, self.error = status, error
        return error


class ModelGateway(Protocol):
    """What the request handler needs from the gateway (``model_gateway.ModelGateway`` is it).

    Declared here, on the HTTP side, so the handler depends on an interface and the gateway on
    the handler, not both on each other.
    """

    upstream: UpstreamConfig
    _client: httpx.Client | None

    def _trial_for(self, tokens: list[str]) -> tuple[str, GatewayUsage] | None: ...

    def redact(self, text: str) -> str: ...

    def _book(self, trial: tuple[str, GatewayUsage] | None, method: str, path: str, out: Outcome,
              t0: float) -> None: ...


class UnixServer(socketserver.ThreadingUnixStreamServer):
    daemon_threads = True

    def __init__(self, path: str, gateway: ModelGateway) -> None:
        self.gateway = gateway
        super().__init__(path, _Handler)


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "tbflow-gateway"
    sys_version = ""
    timeout = IDLE_CONNECTION_SEC
    server: UnixServer

    def log_message(self, format: str, *args: object) -> None:
        pass  # the default needs a TCP peer address; requests are booked by the gateway instead

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _serve(self) -> None:
        gw, t0, out = self.server.gateway, time.monotonic(), Outcome()
        self._started = False  # response headers sent: from here on only closing can signal failure
        path, _, query = self.path.partition("?")
        self._booking: tuple | None = (gw, None, path, out, t0)
        family, rest = _family_and_route(path, self.headers)
        query, query_key = _without_key(query) if family == "gemini" else (query, None)
        try:
            body = self._read_body()
            trial = gw._trial_for(_presented_tokens(self.headers) + ([query_key] if query_key else []))
            self._booking = (gw, trial, path, out, t0)
            if trial is None:
                self._error(family, 401, out.fail(401, "tbflow gateway: missing or unknown trial token"))
            else:
                self._forward(gw, family, rest, query, body, out)
        except _BadRequest as exc:
            self.close_connection = True
            self._error(family, exc.status, out.fail(exc.status, f"tbflow gateway: {exc}"))
        except Exception as exc:  # a bug must not kill the thread silently nor leak the key in a trace
            self.close_connection = True
            message = out.fail(500, gw.redact(f"tbflow gateway internal error: {type(exc).__name__}: {exc}"))
            if not self._started:
                self._error(family, 500, message)
        finally:
            self._book()

    def _book(self) -> None:
        """Book the request once, *before* the response's last byte: a client that has its whole
        reply (e.g. a CLI that then exits) must find the request already counted."""
        if self._booking is not None:
            gw, trial, path, out, t0 = self._booking
            self._booking = None
            gw._book(trial, self.command, path, out, t0)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts: list[bytes] = []
            total = 0
            while True:
                try:
                    size = int(self.rfile.readline(1024).split(b";")[0].strip(), 16)
                except ValueError:
                    raise _BadRequest(400, "malformed chunked request body") from None
                if size == 0:
                    while self.rfile.readline(1024) not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(parts)
                total += size
                if total > MAX_REQUEST_BYTES:
                    raise _BadRequest(413, f"request body over {MAX_REQUEST_BYTES} bytes")
                parts.append(self.rfile.read(size))
                self.rfile.readline(8)
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            raise _BadRequest(400, "malformed Content-Length") from None
        if length > MAX_REQUEST_BYTES:
            raise _BadRequest(413, f"request body over {MAX_REQUEST_BYTES} bytes")
        return self.rfile.read(length) if length > 0 else b""

    def _forward(self, gw: ModelGateway, family: Family, rest: str, query: str, body: bytes, out: Outcome) -> None:
        routes = _POST_ROUTES if self.command == "POST" else _GET_ROUTES if self.command == "GET" else None
        if family == "gemini":
            routes = _GEMINI_ROUTES if self.command == "POST" else None
        if not rest or routes is None or not routes.fullmatch(rest):
            what = f"{self.command} {self.path.partition('?')[0]}"
            return self._error(family, 404, out.fail(404, f"tbflow gateway does not forward {what}"))
        endpoint = gw.upstream.endpoint(family)
        if endpoint is None or gw._client is None:
            return self._error(family, 502, out.fail(502, f"tbflow gateway: no {family} upstream is configured"))
        headers = [(k, v) for k, v in self.headers.items() if k.lower() not in _DROP_REQUEST]
        headers.append(("Accept-Encoding", "identity"))
        auth = endpoint.auth_header()
        if auth:
            headers.append(auth)
        url = endpoint.base_url + rest + (f"?{query}" if query else "")
        try:
            request = gw._client.build_request(self.command, url, headers=headers, content=body)
            resp = gw._client.send(request, stream=True)
        except httpx.TimeoutException:
            why = f"upstream {endpoint.base_url} did not answer within {gw.upstream.read_timeout_sec:g} s"
            return self._error(family, 504, out.fail(504, f"tbflow gateway: {why}"))
        except httpx.HTTPError as exc:
            why = f"upstream {endpoint.base_url} unreachable: {type(exc).__name__}: {exc}"
            return self._error(family, 502, out.fail(502, gw.redact(f"tbflow gateway: {why}")))
        try:
            if resp.status_code >= 400:
                self._relay_error(gw, family, resp, out)
            else:
                self._relay_body(gw, resp, out)
        finally:
            resp.close()

    def _relay_error(self, gw: ModelGateway, family: Family, resp: httpx.Response, out: Outcome) -> None:
        """Upstream errors are small: buffer, redact (providers echo keys), pass on with their status."""
        data = bytearray()
        try:
            for chunk in resp.iter_raw():
                data += chunk
                if len(data) > MAX_ERROR_BODY:
                    break
        except httpx.HTTPError:
            pass
        text = gw.redact(bytes(data[:MAX_ERROR_BODY]).decode("utf-8", "replace"))
        out.fail(resp.status_code, f"upstream {resp.status_code}: {_error_message(text)}")
        self._send(resp.status_code, text.encode(), [(k, v) for k, v in resp.headers.items()
                                                     if k.lower() not in _DROP_RESPONSE], resp.reason_phrase)

    def _relay_body(self, gw: ModelGateway, resp: httpx.Response, out: Outcome) -> None:
        """Stream the reply through as it arrives, reading usage on the way."""
        out.status = resp.status_code
        sse = "text/event-stream" in resp.headers.get("content-type", "")
        parser, collected = (SseUsageParser() if sse else None), bytearray()
        no_body = resp.status_code in (204, 304)
        chunked = "content-length" not in resp.headers and not no_body
        length = 0 if no_body or chunked else int(resp.headers["content-length"])

        def settle() -> None:
            if self._booking is not None:
                out.tokens = parser.result() if parser is not None else usage_from_json(bytes(collected))
                self._book()
        self._started = True
        self.send_response(resp.status_code, resp.reason_phrase)
        for k, v in resp.headers.items():
            if k.lower() not in _DROP_RESPONSE:
                self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif not no_body:
            self.send_header("Content-Length", str(length))
        if not chunked and length == 0:
            settle()
        self.end_headers()
        try:
            sent = 0
            for chunk in resp.iter_raw():
                if parser is not None:
                    parser.feed(chunk)
                elif len(collected) <= MAX_PARSE_BYTES:
                    collected += chunk
                sent += len(chunk)
                if not chunked and sent >= length:
                    settle()
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            if chunked:
                settle()
                self.wfile.write(b"0\r\n\r\n")
        except httpx.TimeoutException:
            self.close_connection = True  # the client sees a cut stream, as from the provider
            out.fail(504, f"tbflow gateway: upstream stalled mid-reply for {gw.upstream.read_timeout_sec:g} s")
        except httpx.HTTPError as exc:
            self.close_connection = True
            out.fail(502, gw.redact(f"tbflow gateway: upstream broke off mid-reply: {type(exc).__name__}: {exc}"))
        except OSError:
            self.close_connection = True
            out.fail(499, "tbflow gateway: the client closed the connection mid-reply")
        finally:
            settle()

    def _error(self, family: Family, status: int, message: str) -> None:
        self._send(status, error_body(family, status, message), [("Content-Type", "application/json")])

    def _send(self, status: int, data: bytes, headers: list[tuple[str, str]], reason: str | None = None) -> None:
        self._started = True
        self._book()
        try:
            self.send_response(status, reason)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True


def _family_and_route(path: str, headers) -> tuple[Family, str]:
    """The API family (upstream, error shape) and the route forwarded under the upstream's base.

    OpenAI and Anthropic routes are what follows ``/v1``; ``/v1/models`` goes by the auth header
    style. A Gemini route keeps its whole path: its API version (``/v1beta``) is part of it.
    """
    if path.startswith(("/v1beta/", "/v1alpha/")) or (path.startswith("/v1/") and ":" in path):
        return "gemini", path
    rest = path[3:] if path.startswith("/v1/") else ""
    anthropic = rest.startswith("/messages") or ("x-api-key" in headers and "authorization" not in headers)
    return ("anthropic" if anthropic else "openai"), rest


def _without_key(query: str) -> tuple[str, str | None]:
    """The query without Google's ``key=`` parameter (a token there never goes upstream), and that key."""
    kept, key = [], None
    for part in query.split("&") if query else []:
        name, _, value = part.partition("=")
        if name == "key":
            key = value.strip() or key
        else:
            kept.append(part)
    return "&".join(kept), key


def _presented_tokens(headers) -> list[str]:
    found = []
    auth = headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        found.append(auth[7:].strip())
    for name in ("x-api-key", "x-goog-api-key"):
        if headers.get(name):
            found.append(headers[name].strip())
    return found


def _error_message(text: str) -> str:
    """The provider's ``error.message`` when the body is JSON, else the start of the text."""
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:500]
    except (ValueError, AttributeError):
        pass
    return text.strip()[:500]
