"""The host-side model gateway: the only place the real provider key lives.

Why: trial containers run untrusted agent code with networking off. Each job runs one gateway on
a unix socket; the socket's directory is bind-mounted (read-only) into trial containers, where
``tbflow-relay`` (see ``relay_build``) exposes it on the container's loopback. A CLI inside gets a
per-trial token, never the key; the gateway swaps the token for the real key and forwards. Because
every model request passes here, the gateway also counts requests and tokens per trial from the
upstream's own responses: the second witness, next to the CLI's log, that the model was reached.

Rules it keeps:

* Tokens: ``Authorization: Bearer <tok>`` or ``x-api-key: <tok>``. Missing/unknown → 401 in the
  API's error shape, never forwarded. Every client auth header is stripped before forwarding.
* Only model routes under ``/v1`` are forwarded (``responses``, ``chat/completions``, ``messages``,
  ``messages/count_tokens``, ``GET models``): the agent must not reach the account's other APIs
  (files, fine-tuning, ...) with our key. Anything else → 404.
* Streams pass through chunk by chunk (CLIs time out on buffered SSE); ``Accept-Encoding:
  identity`` is asked of the upstream so usage can be read on the way.
* Upstream errors pass through with their status, bodies redacted (providers echo keys). A hung
  upstream ends in 504 after ``read_timeout_sec`` without bytes; unreachable → 502.
* The key is never logged or written: ``SecretStr`` in the config, redaction of every error text
  and of the optional request log (which holds no headers and no tokens either). Nothing but the
  socket may live in the socket's directory: it is visible to every trial container of the job.

Configuration: ``gateway_config.UpstreamConfig`` (environment variables are listed there).
The CLI's base URL is the relay's ``http://127.0.0.1:PORT`` (+ ``/v1`` for OpenAI clients).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import socketserver
import threading
import time
from datetime import datetime, timezone
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import httpx
from .errors import TbflowError
from .gateway_config import Family, GatewayConfigError, UpstreamConfig, UpstreamEndpoint  # noqa: F401 (re-export)
from .gateway_usage import MAX_PARSE_BYTES, GatewayUsage, SseUsageParser, TokenCount, usage_from_json

_POST_ROUTES = re.compile(r"/(responses|responses/compact|chat/completions|messages|messages/count_tokens)")
_GET_ROUTES = re.compile(r"/models(/[A-Za-z0-9._:@-]+)?")
_HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization", "te",
        "trailer", "transfer-encoding", "upgrade", "host", "content-length"}
_DROP_REQUEST = _HOP | {"authorization", "x-api-key", "api-key", "cookie", "accept-encoding"}
_DROP_RESPONSE = _HOP | {"server", "date"}
MAX_REQUEST_BYTES = 64 * 1024 * 1024
MAX_ERROR_BODY = 1024 * 1024
IDLE_CONNECTION_SEC = 300
REDACTED = "[REDACTED]"


class GatewayError(TbflowError):
    """The gateway cannot start or was asked about a trial it does not know."""


def error_body(family: Family, status: int, message: str) -> bytes:
    """A gateway-made error in the shape the CLI parses (Anthropic's or OpenAI's)."""
    if family == "anthropic":
        kind = {401: "authentication_error", 404: "not_found_error", 413: "request_too_large",
                504: "timeout_error"}.get(status, "invalid_request_error" if status < 500 else "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    code = {401: "invalid_api_key", 404: "unknown_url"}.get(status)
    kind = "invalid_request_error" if status < 500 else "server_error"
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


class _Outcome:
    """What one forwarded request ended as (filled in by the handler, booked by the gateway)."""

    def __init__(self) -> None:
        self.status = 0
        self.tokens: TokenCount | None = None
        self.error: str | None = None

    def fail(self, status: int, error: str) -> str:
        self.status, self.error = status, error
        return error


class ModelGateway:
    """One job's gateway on ``socket_path``: ``start()``, ``register_trial()`` → token, ``usage()``, ``stop()``."""

    def __init__(self, socket_path: Path | str, upstream: UpstreamConfig, *,
                 log_path: Path | str | None = None) -> None:
        self.socket_path = Path(socket_path)
        self.upstream = upstream
        self.log_path = Path(log_path) if log_path else None
        self._secrets = upstream.secrets()
        self._lock = threading.Lock()
        self._tokens: dict[str, str] = {}           # token -> trial id
        self._usage: dict[str, GatewayUsage] = {}   # trial id -> usage
        self.rejected = 0
        self._server: _UnixServer | None = None
        self._client: httpx.Client | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> "ModelGateway":
        path = self.socket_path
        if not path.parent.exists():
            path.parent.mkdir(parents=True)
            os.chmod(path.parent, 0o755)  # traversable by a non-root container user
        if path.is_socket():
            if _answers(path):
                raise GatewayError(f"another gateway already listens on {path}")
            path.unlink()
        elif path.exists():
            raise GatewayError(f"{path} exists and is not a socket")
        dir_fd, bind_to = None, str(path)
        if len(os.fsencode(bind_to)) >= 108:  # sun_path limit: bind through a short /proc path
            dir_fd = os.open(path.parent, os.O_PATH | os.O_DIRECTORY)
            bind_to = f"/proc/self/fd/{dir_fd}/{path.name}"
        try:
            self._server = _UnixServer(bind_to, self)
        except OSError as exc:
            raise GatewayError(f"cannot listen on {path}: {exc}") from exc
        finally:
            if dir_fd is not None:
                os.close(dir_fd)
        os.chmod(path, 0o666)  # container users of any uid may connect
        cfg = self.upstream
        self._client = httpx.Client(
            timeout=httpx.Timeout(cfg.read_timeout_sec, connect=cfg.connect_timeout_sec),
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
            trust_env=cfg.trust_env_proxy, follow_redirects=False)
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.2},
                         name=f"model-gateway:{path.name}", daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
            self.socket_path.unlink(missing_ok=True)
        if self._client is not None:
            self._client.close()
            self._client = None

    def __enter__(self) -> "ModelGateway":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- trials --------------------------------------------------------------------------------

    def register_trial(self, trial_id: str) -> str:
        """A fresh token for ``trial_id`` (an earlier one is revoked, its usage reset)."""
        token = "sk-tbflow-" + secrets.token_urlsafe(32)
        with self._lock:
            self._revoke(trial_id)
            self._tokens[token] = trial_id
            self._usage[trial_id] = GatewayUsage()
        return token

    def unregister_trial(self, trial_id: str) -> GatewayUsage:
        """Revoke the trial's token and return its final usage."""
        with self._lock:
            final = self._usage_locked(trial_id)
            self._revoke(trial_id)
            del self._usage[trial_id]
        return final

    def usage(self, trial_id: str) -> GatewayUsage:
        with self._lock:
            return self._usage_locked(trial_id)

    def _usage_locked(self, trial_id: str) -> GatewayUsage:
        if trial_id not in self._usage:
            raise GatewayError(f"the gateway has no trial {trial_id!r}")
        return self._usage[trial_id].model_copy(deep=True)

    def _revoke(self, trial_id: str) -> None:
        for token in [t for t, owner in self._tokens.items() if owner == trial_id]:
            del self._tokens[token]

    def _trial_for(self, tokens: list[str]) -> tuple[str, GatewayUsage] | None:
        with self._lock:
            for token in tokens:
                trial = self._tokens.get(token)
                if trial is not None:
                    return trial, self._usage[trial]
            self.rejected += 1
            return None

    # -- bookkeeping ---------------------------------------------------------------------------

    def redact(self, text: str) -> str:
        for key in self._secrets:
            text = text.replace(key, REDACTED)
        return text

    def _book(self, trial: tuple[str, GatewayUsage] | None, method: str, path: str, out: _Outcome, t0: float) -> None:
        if trial is not None:
            with self._lock:
                trial[1].add(out.status, out.tokens, out.error)
        if self.log_path is not None:
            line = {"time": datetime.now(timezone.utc).isoformat(), "trial": trial[0] if trial else None,
                    "method": method, "path": path, "status": out.status,
                    "ms": round((time.monotonic() - t0) * 1000, 1),
                    "input_tokens": out.tokens.input_tokens if out.tokens else None,
                    "output_tokens": out.tokens.output_tokens if out.tokens else None, "error": out.error}
            with self._lock, self.log_path.open("a", encoding="utf-8") as fh:
                fh.write(self.redact(json.dumps(line)) + "\n")


def _answers(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
            return True
        except OSError:
            return False


class _UnixServer(socketserver.ThreadingUnixStreamServer):
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
    server: _UnixServer

    def log_message(self, format: str, *args: object) -> None:
        pass  # the default needs a TCP peer address; requests are booked by the gateway instead

    def do_GET(self) -> None:
        self._serve()

    do_POST = do_PUT = do_PATCH = do_DELETE = do_GET

    def _serve(self) -> None:
        gw, t0, out = self.server.gateway, time.monotonic(), _Outcome()
        self._started = False  # response headers sent: from here on only closing can signal failure
        path, _, query = self.path.partition("?")
        rest = path[3:] if path.startswith("/v1/") else ""
        # the family decides the upstream and the error shape; /v1/models goes by the auth header style
        anthropic = rest.startswith("/messages") or (
            "x-api-key" in self.headers and "authorization" not in self.headers)
        family: Family = "anthropic" if anthropic else "openai"
        trial = None
        try:
            body = self._read_body()
            trial = gw._trial_for(_presented_tokens(self.headers))
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
            gw._book(trial, self.command, path, out, t0)

    def _read_body(self) -> bytes:
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            parts, total = [], 0
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

    def _forward(self, gw: ModelGateway, family: Family, rest: str, query: str, body: bytes, out: _Outcome) -> None:
        routes = _POST_ROUTES if self.command == "POST" else _GET_ROUTES if self.command == "GET" else None
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

    def _relay_error(self, gw: ModelGateway, family: Family, resp: httpx.Response, out: _Outcome) -> None:
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

    def _relay_body(self, gw: ModelGateway, resp: httpx.Response, out: _Outcome) -> None:
        """Stream the reply through as it arrives, reading usage on the way."""
        out.status = resp.status_code
        sse = "text/event-stream" in resp.headers.get("content-type", "")
        parser, collected = (SseUsageParser() if sse else None), bytearray()
        no_body = resp.status_code in (204, 304)
        chunked = "content-length" not in resp.headers and not no_body
        self._started = True
        self.send_response(resp.status_code, resp.reason_phrase)
        for k, v in resp.headers.items():
            if k.lower() not in _DROP_RESPONSE:
                self.send_header(k, v)
        if chunked:
            self.send_header("Transfer-Encoding", "chunked")
        elif not no_body:
            self.send_header("Content-Length", resp.headers["content-length"])
        self.end_headers()
        try:
            for chunk in resp.iter_raw():
                if parser is not None:
                    parser.feed(chunk)
                elif len(collected) <= MAX_PARSE_BYTES:
                    collected += chunk
                self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk)
            if chunked:
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
            out.tokens = parser.result() if parser is not None else usage_from_json(bytes(collected))

    def _error(self, family: Family, status: int, message: str) -> None:
        self._send(status, error_body(family, status, message), [("Content-Type", "application/json")])

    def _send(self, status: int, data: bytes, headers: list[tuple[str, str]], reason: str | None = None) -> None:
        self._started = True
        try:
            self.send_response(status, reason)
            for k, v in headers:
                self.send_header(k, v)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except OSError:
            self.close_connection = True


def _presented_tokens(headers) -> list[str]:
    found = []
    auth = headers.get("Authorization", "")
    if auth[:7].lower() == "bearer ":
        found.append(auth[7:].strip())
    if headers.get("x-api-key"):
        found.append(headers["x-api-key"].strip())
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
