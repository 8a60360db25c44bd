"""The model gateway's HTTP side: a Starlette app that forwards each model request upstream with httpx.

Why separate from ``model_gateway``: this module is the gateway's rules on the wire (which routes
pass, which headers go on (``gateway_headers``), how a reply is streamed through and when it is booked);
``model_gateway`` is the state (trials, tokens, usage) and lifecycle, ``gateway_server`` serves
this app on the unix socket. The app holds no state of its own beyond one request and books
every request through ``ModelGateway._book`` exactly once. HTTP itself (framing, chunked
bodies, keep-alive) is uvicorn's and httpx's, so nothing here parses the protocol.

Streaming: the reply is sent to the client chunk by chunk as the upstream sends it (CLIs time
out on buffered SSE), while ``gateway_usage`` reads usage from the same bytes. The request is
booked just *before* the reply's last byte, so a CLI that has its whole reply and exits finds
its request already counted. Once the reply's headers are sent, a failure can only be signalled
by cutting the connection (``AbortConnection``), as a provider's own broken stream would be.
"""

from __future__ import annotations

import contextlib
import json
import time
from typing import AsyncIterator, Callable, Protocol

import anyio
import httpx
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.requests import ClientDisconnect, Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.types import Receive, Scope, Send

from tasks_lib.gateway.gateway_config import Family, UpstreamConfig
from tasks_lib.gateway.gateway_headers import forwarded_headers, relayed_headers
from tasks_lib.gateway.gateway_limits import GatewayLimits, InFlight, LimitExceeded
from tasks_lib.gateway.gateway_policy import TrialScope, asked_model, family_refusal, model_refusal, refused
from tasks_lib.gateway.gateway_routes import family_and_route, presented_tokens, routed, without_key
from tasks_lib.gateway.gateway_server import AbortConnection
from tasks_lib.gateway.gateway_usage import MAX_PARSE_BYTES, GatewayUsage, SseUsageParser, TokenCount, usage_from_json

_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]
MAX_ERROR_BODY = 1024 * 1024
#: a request body up to this size is parsed for its model on the event loop (a few ms at most)
_PARSE_ON_LOOP_BYTES = 256 * 1024


def error_body(family: Family, status: int, message: str) -> bytes:
    """A gateway-made error in the shape the CLI parses (Anthropic's, Google's or OpenAI's)."""
    if family == "gemini":
        status_name = {401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND", 413: "INVALID_ARGUMENT",
                       429: "RESOURCE_EXHAUSTED", 503: "UNAVAILABLE", 504: "DEADLINE_EXCEEDED"}
        return json.dumps({"error": {"code": status, "message": message, "status": status_name.get(
            status, "INVALID_ARGUMENT" if status < 500 else "INTERNAL")}}).encode()
    if family == "anthropic":
        kind = {401: "authentication_error", 403: "permission_error", 404: "not_found_error",
                413: "request_too_large", 429: "rate_limit_error", 503: "overloaded_error",
                504: "timeout_error"}.get(status, "invalid_request_error" if status < 500 else "api_error")
        return json.dumps({"type": "error", "error": {"type": kind, "message": message}}).encode()
    code = {401: "invalid_api_key", 403: "model_not_allowed", 404: "unknown_url"}.get(status)
    kind = "invalid_request_error" if status < 500 else "server_error"
    return json.dumps({"error": {"message": message, "type": kind, "param": None, "code": code}}).encode()


class Outcome:
    """What one forwarded request ended as (filled in by the app, booked by the gateway)."""

    def __init__(self) -> None:
        self.status = 0
        self.tokens: TokenCount | None = None
        self.error: str | None = None
        #: the bodies, for the trial's recording (``exchange/exchange_recorder``); headers never
        self.request, self.reply, self.sse = b"", b"", False

    def fail(self, status: int, error: str) -> str:
        self.status, self.error = status, error
        return error


class ModelGateway(Protocol):
    """What the app needs from the gateway (``model_gateway.ModelGateway`` is it).

    Declared here, on the HTTP side, so the app depends on an interface and the gateway on
    the app, not both on each other.
    """

    upstream: UpstreamConfig
    limits: GatewayLimits
    in_flight: InFlight

    def _trial_for(self, tokens: list[str]) -> tuple[str, GatewayUsage] | None: ...

    def scope_of(self, trial_id: str) -> TrialScope | None: ...

    def _refuse(self, trial: tuple[str, GatewayUsage], evidence) -> None: ...

    def redact(self, text: str) -> str: ...

    def _book(self, trial: tuple[str, GatewayUsage] | None, method: str, path: str, out: Outcome,
              t0: float) -> None: ...


def gateway_app(gateway: ModelGateway) -> Starlette:
    """The ASGI app of ``gateway``: one route takes every path, the gateway's own rules decide
    (a bad token is a 401 before a bad route is a 404, both in the API's error shape)."""

    @contextlib.asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict]:
        # created in the server's event loop, which its connections belong to
        cfg = gateway.upstream
        async with httpx.AsyncClient(
                timeout=httpx.Timeout(cfg.read_timeout_sec, connect=cfg.connect_timeout_sec),
                limits=httpx.Limits(max_connections=None, max_keepalive_connections=32),
                trust_env=cfg.trust_env_proxy, follow_redirects=False) as client:
            yield {"client": client}

    async def endpoint(request: Request) -> Response:
        return await _serve(gateway, request)

    return Starlette(routes=[Route("/{path:path}", endpoint, methods=_METHODS)], lifespan=lifespan)


class _Booking:
    """Books one request once: before the reply's last byte, or when it ends without one."""

    def __init__(self, gw: ModelGateway, method: str, path: str) -> None:
        self.gw, self.method, self.path = gw, method, path
        self.trial: tuple[str, GatewayUsage] | None = None
        self.out, self.t0, self.done = Outcome(), time.monotonic(), False
        self.streaming = False  # handed over to the reply that streams: it settles, not ``_serve``
        self.release: Callable[[], None] | None = None  # gives back the request's slot and body bytes

    def settle(self) -> None:
        if not self.done:
            self.done = True
            if not self.out.status:  # cancelled before any outcome: the client or the gateway went away
                self.out.fail(499, "tbflow gateway: the request ended before its reply (client gone or gateway stopping)")
            self.gw._book(self.trial, self.method, self.path, self.out, self.t0)
            if self.release is not None:
                self.release()


class _BadRequest(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        super().__init__(message)


async def _serve(gw: ModelGateway, request: Request) -> Response:
    """One request, in the order that keeps a stranger cheap: token (from the headers), route,
    provider; only then the body, under its bounds; then the model it names; then upstream."""
    path = request.scope["raw_path"].decode("latin-1")  # as sent: forwarded unchanged
    query = request.scope["query_string"].decode("latin-1")
    booking = _Booking(gw, request.method, path)
    family, rest = family_and_route(path, request.headers)
    query, query_key = without_key(query) if family == "gemini" else (query, None)
    try:
        booking.trial = gw._trial_for(presented_tokens(request.headers) + ([query_key] if query_key else []))
        if booking.trial is None:  # the body is never read: a stranger costs one small buffer
            return _error(booking, family, 401, "tbflow gateway: missing or unknown trial token", close=True)
        if not routed(request.method, family, rest):
            return _error(booking, family, 404, f"tbflow gateway does not forward {request.method} {path}", close=True)
        scope = gw.scope_of(booking.trial[0])
        if scope is not None and (why := family_refusal(scope, family)):
            return _refusal(booking, family, None, why)
        body = booking.out.request = await _read_body(request, booking, gw.limits)
        asked = await _asked_model(family, request.method, path, body) if scope is not None else None
        if scope is not None and (why := model_refusal(scope, request.method, asked)):
            return _refusal(booking, family, asked, why)
        return await _forward(request, booking, family, rest, query, body)
    except (_BadRequest, LimitExceeded) as exc:
        return _error(booking, family, exc.status, f"tbflow gateway: {exc}", close=True)
    except ClientDisconnect:
        booking.out.fail(499, "tbflow gateway: the client closed the connection before its request was complete")
        return Response(status_code=499)
    except Exception as exc:  # a bug must not end the request silently nor leak the key in a trace
        message = gw.redact(f"tbflow gateway internal error: {type(exc).__name__}: {exc}")
        return _error(booking, family, 500, message, close=True)
    finally:
        if not booking.streaming:
            booking.settle()


async def _asked_model(family: Family, method: str, path: str, body: bytes) -> str | None:
    """``gateway_policy.asked_model``; a large body is parsed in a thread, so that parsing it does
    not hold up every other trial's requests and streams on the server's one event loop."""
    if len(body) <= _PARSE_ON_LOOP_BYTES:
        return asked_model(family, method, path, body)
    return await anyio.to_thread.run_sync(asked_model, family, method, path, body)


def _refusal(booking: _Booking, family: Family, asked: str | None, why: str) -> Response:
    """A 403 for a request outside the trial's scope, its evidence kept in the trial's usage."""
    assert booking.trial is not None
    booking.gw._refuse(booking.trial, refused(booking.method, booking.path, family, asked, why))
    return _error(booking, family, 403, f"tbflow gateway: {why}", close=True)


async def _read_body(request: Request, booking: _Booking, limits: GatewayLimits) -> bytes:
    """The body of an authenticated request, within its trial's slot, the byte bounds and the
    deadline (``gateway_limits``); the slot and bytes are given back when the booking settles."""
    in_flight = booking.gw.in_flight
    assert booking.trial is not None
    trial, held = booking.trial[0], [0]
    in_flight.enter(trial)
    booking.release = lambda: in_flight.leave(trial, held[0])
    declared = request.headers.get("content-length")  # well-formed: uvicorn refused it otherwise
    if declared is not None and int(declared) > limits.max_body_bytes:
        raise LimitExceeded(413, f"request body over {limits.max_body_bytes} bytes")
    body = bytearray()
    try:
        with anyio.fail_after(limits.body_deadline_sec):
            async for chunk in request.stream():
                in_flight.take_bytes(trial, held[0], len(chunk))
                held[0] += len(chunk)
                body += chunk
    except TimeoutError:
        raise _BadRequest(408, f"the request body did not arrive within {limits.body_deadline_sec:g} s") from None
    return bytes(body)


async def _forward(request: Request, booking: _Booking, family: Family, rest: str, query: str,
                   body: bytes) -> Response:
    gw, method = booking.gw, request.method
    endpoint = gw.upstream.endpoint(family)
    if endpoint is None:
        return _error(booking, family, 502, f"tbflow gateway: no {family} upstream is configured")
    headers = forwarded_headers(family, request.headers.items())
    headers.append(("accept-encoding", "identity"))
    auth = endpoint.auth_header()
    if auth:
        headers.append(auth)
    client: httpx.AsyncClient = request.state.client
    url = endpoint.base_url + rest + (f"?{query}" if query else "")
    try:
        resp = await client.send(client.build_request(method, url, headers=headers, content=body), stream=True)
    except httpx.TimeoutException:
        why = f"upstream {endpoint.base_url} did not answer within {gw.upstream.read_timeout_sec:g} s"
        return _error(booking, family, 504, f"tbflow gateway: {why}")
    except httpx.HTTPError as exc:
        why = f"upstream {endpoint.base_url} unreachable: {type(exc).__name__}: {exc}"
        return _error(booking, family, 502, gw.redact(f"tbflow gateway: {why}"))
    if resp.status_code >= 400:
        try:
            return await _relay_error(booking, resp)
        finally:
            await resp.aclose()
    reply = _RelayedReply(resp, booking)
    booking.streaming = True
    return reply


async def _relay_error(booking: _Booking, resp: httpx.Response) -> Response:
    """Upstream errors are small: buffer, redact (providers echo keys), pass on with their status."""
    data = bytearray()
    try:
        async for chunk in resp.aiter_raw():
            data += chunk
            if len(data) > MAX_ERROR_BODY:
                break
    except httpx.HTTPError:
        pass
    text = booking.gw.redact(bytes(data[:MAX_ERROR_BODY]).decode("utf-8", "replace"))
    booking.out.fail(resp.status_code, f"upstream {resp.status_code}: {_error_message(text)}")
    headers = relayed_headers(resp.headers.multi_items(), booking.gw.redact, keep_length=False)
    booking.settle()
    return Response(text.encode(), resp.status_code, headers=_raw(headers))


class _RelayedReply(Response):
    """The upstream's reply, relayed as it arrives while its usage is read on the way.

    Its own ASGI call (not ``StreamingResponse``): the booking and the upstream's release must
    happen whatever ends the reply, even a client gone before the first chunk is sent.
    """

    def __init__(self, upstream: httpx.Response, booking: _Booking) -> None:
        self.upstream, self.booking = upstream, booking
        self.status_code, self.background = upstream.status_code, None
        self.init_headers(_raw(relayed_headers(upstream.headers.multi_items(), booking.gw.redact)))
        sse = "text/event-stream" in upstream.headers.get("content-type", "")
        self._parser, self._collected = (SseUsageParser() if sse else None), bytearray()
        no_body = upstream.status_code in (204, 304)
        declared = upstream.headers.get("content-length")
        self._length = 0 if no_body else int(declared) if declared is not None else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        out, complete = self.booking.out, False
        try:
            async with anyio.create_task_group() as tg:
                tg.start_soon(_cancel_on_disconnect, receive, tg.cancel_scope)
                complete = await self._relay(send)
                tg.cancel_scope.cancel()
        except Exception as exc:  # a bug: the reply is cut, the key not leaked
            out.fail(500, self.booking.gw.redact(f"tbflow gateway internal error: {type(exc).__name__}: {exc}"))
        finally:
            if not complete and out.status < 400:
                out.fail(499, "tbflow gateway: the reply was cut off: the client left or the gateway stopped")
            self._settle()  # with the usage seen so far: the provider metered it
            with anyio.CancelScope(shield=True):
                await self.upstream.aclose()
        if not complete:
            raise AbortConnection()  # headers are out: the client sees a cut stream, as from the provider

    async def _relay(self, send: Send) -> bool:
        """Whether the whole reply went through; a stall or break upstream is booked (504/502)."""
        out, gw = self.booking.out, self.booking.gw
        out.status = self.status_code
        await send({"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers})
        sent = 0
        try:
            if self._length == 0:
                self._settle()
            async for chunk in self.upstream.aiter_raw():
                self._meter(chunk)
                sent += len(chunk)
                if self._length is not None and sent >= self._length:
                    self._settle()
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
        except httpx.TimeoutException:
            out.fail(504, f"tbflow gateway: upstream stalled mid-reply for {gw.upstream.read_timeout_sec:g} s")
            return False
        except httpx.HTTPError as exc:
            out.fail(502, gw.redact(f"tbflow gateway: upstream broke off mid-reply: {type(exc).__name__}: {exc}"))
            return False
        self._settle()
        await send({"type": "http.response.body", "body": b"", "more_body": False})
        return True

    def _meter(self, chunk: bytes) -> None:
        if self._parser is not None:
            self._parser.feed(chunk)
        if len(self._collected) <= MAX_PARSE_BYTES:  # kept for the recording too, streamed or not
            self._collected += chunk

    def _settle(self) -> None:
        if not self.booking.done:
            out = self.booking.out
            out.reply, out.sse = bytes(self._collected), self._parser is not None
            out.tokens = self._parser.result() if self._parser is not None else usage_from_json(out.reply)
            self.booking.settle()


async def _cancel_on_disconnect(receive: Receive, scope: anyio.CancelScope) -> None:
    """A client that hangs up mid-reply (a CLI killed at its timeout) ends the relay: booked 499."""
    while (await receive())["type"] != "http.disconnect":
        pass
    scope.cancel()


def _error(booking: _Booking, family: Family, status: int, message: str, close: bool = False) -> Response:
    booking.out.fail(status, message)
    booking.settle()
    headers = {"content-type": "application/json"} | ({"connection": "close"} if close else {})
    return Response(error_body(family, status, message), status, headers=headers)


def _raw(headers: list[tuple[str, str]]) -> Headers:
    """Headers that keep repeated names (``set-cookie``), which a dict would merge."""
    return Headers(raw=[(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers])








def _error_message(text: str) -> str:
    """The provider's ``error.message`` when the body is JSON, else the start of the text."""
    try:
        err = json.loads(text).get("error")
        if isinstance(err, dict) and isinstance(err.get("message"), str):
            return err["message"][:500]
    except (ValueError, AttributeError):
        pass
    return text.strip()[:500]
