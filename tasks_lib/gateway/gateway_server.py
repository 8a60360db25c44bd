"""Serving an ASGI app on an already-bound unix socket: uvicorn, in a thread of the host process.

Why a thread with its own event loop: the gateway lives as long as a job, inside the process
that runs it (a command or a worker), next to Prefect's own machinery; a thread keeps it out of
that process's main loop and signals. uvicorn installs signal handlers only on the main thread,
so Ctrl-C stays tbflow's (``flows/cli/stopping.py``). Why the caller binds the socket: its path
rules (modes, the unix path limit, stale versus live) are the gateway's, and a socket that
listens before ``start`` returns is what makes the start synchronous.

``start`` returns once uvicorn serves; ``stop`` ends requests still in flight at once (they
would otherwise hold the stop until their upstream answered), closes the connections and the
app (its lifespan), and joins the thread.

Bounds (``gateway_limits``): a connection past ``max_connections``, or past its container's
``per_container_connections`` (``gateway_peers``), is closed as it opens, and
one that has not sent a request's headers within ``headers_deadline_sec`` (of opening, or of its
previous reply plus the keep-alive idle time) is closed, so idle or slow-loris connections cannot
take the socket's slots, nor the process's descriptors, for ever.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

from tasks_lib.gateway.gateway_limits import GatewayLimits
from tasks_lib.gateway.gateway_peers import peer_bucket

#: seconds to wait for the server's thread at stop
STOP_WAIT_SEC = 10.0
#: an idle keep-alive connection is closed after this long
IDLE_CONNECTION_SEC = 300


class AbortConnection(Exception):
    """Raised by the app to cut the connection mid-reply (uvicorn closes it); never logged."""


class _Expected(logging.Filter):
    """Drops the traces of ends this server causes on purpose: a cut reply, a request cancelled at stop."""

    def filter(self, record: logging.LogRecord) -> bool:
        kind = record.exc_info[0] if record.exc_info else None
        return not (kind is not None and issubclass(kind, (AbortConnection, asyncio.CancelledError)))


_log = logging.getLogger(__name__)
_log.addFilter(_Expected())


class _Connection(H11Protocol):
    """uvicorn's HTTP/1.1 connection, with two differences the gateway needs.

    A client that half-closes after its request still gets the reply (``tbflow-relay`` passes a
    CLI's ``shutdown(SHUT_WR)`` on; uvicorn would close at once). Its log lines go to this
    module's logger (filtered, see ``_Expected``); requests are booked by the gateway, not in an
    access log.
    """

    #: set per server by ``UnixAsgiServer`` (uvicorn makes the connections, with its own arguments)
    limits = GatewayLimits()
    #: open connections per peer container (``gateway_peers``), on the server's loop only
    per_peer: dict[str, int] = {}

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 (uvicorn's signature)
        super().__init__(*args, **kwargs)
        self.logger = _log
        self.access_log = False
        self._deadline: asyncio.TimerHandle | None = None
        self._peer: str | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        if len(self.connections) > self.limits.max_connections or not self._count_peer(transport):
            transport.close()  # one too many: refused before it costs more than this
            return
        self._arm(self.limits.headers_deadline_sec)

    def _count_peer(self, transport: asyncio.Transport) -> bool:
        """Count the connection for its container; False when that one holds its bound already."""
        peer = peer_bucket(transport.get_extra_info("socket"))
        if peer is None:
            return True
        if self.per_peer.get(peer, 0) >= self.limits.per_container_connections:
            return False
        self.per_peer[peer] = self.per_peer.get(peer, 0) + 1
        self._peer = peer
        return True

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm(self.timeout_keep_alive + self.limits.headers_deadline_sec)

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        if self._peer is not None:
            left = self.per_peer[self._peer] - 1
            if left:
                self.per_peer[self._peer] = left
            else:
                del self.per_peer[self._peer]
            self._peer = None
        super().connection_lost(exc)

    def _arm(self, delay: float) -> None:
        """Close the connection unless a new request's headers have arrived within ``delay``."""
        if self._deadline is not None:
            self._deadline.cancel()
        self._deadline = self.loop.call_later(delay, self._late, self.cycle)

    def _late(self, waiting_after: object) -> None:
        if self.cycle is waiting_after and not self.transport.is_closing():  # no request since
            self.transport.close()

    def eof_received(self) -> bool | None:  # type: ignore[override]
        cycle = self.cycle
        if cycle is not None and not cycle.response_complete and not cycle.more_body:
            cycle.keep_alive = False  # answer the request, then close
            return True
        return None  # nothing asked, or a request cut short: close now


class _Server(uvicorn.Server):
    """uvicorn's server, woken by ``stop`` instead of its 0.1 s poll, ending in-flight requests at once."""

    def __init__(self, config: uvicorn.Config) -> None:
        super().__init__(config)
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stopping: asyncio.Event | None = None

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        self._loop, self._stopping = asyncio.get_running_loop(), asyncio.Event()
        await super().startup(sockets)
        self.ready.set()

    async def main_loop(self) -> None:
        # uvicorn's loop also refreshes the Date header each second: the gateway sends none
        assert self._stopping is not None
        await self._stopping.wait()

    def request_stop(self) -> None:
        """From any thread."""
        self.should_exit = True
        if self._loop is not None and self._stopping is not None:
            self._loop.call_soon_threadsafe(self._stopping.set)

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        tasks = list(self.server_state.tasks)
        for task in tasks:  # a request waiting on its upstream would hold the stop for minutes
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for connection in list(self.server_state.connections):
            connection.shutdown()  # every request has ended: this closes them all
        await self.lifespan.shutdown()

    def run_until_stopped(self, sock: socket.socket) -> None:
        try:
            self.run(sockets=[sock])
        except BaseException as exc:  # noqa: BLE001 (SystemExit too: uvicorn exits on a failed startup)
            self.error = exc
        finally:
            self.ready.set()


class UnixAsgiServer:
    """``app`` served on the listening unix socket ``sock`` until ``stop()``."""

    def __init__(self, sock: socket.socket, app: ASGIApp, name: str, limits: GatewayLimits | None = None) -> None:
        limits = limits or GatewayLimits()
        connection = type("_BoundedConnection", (_Connection,), {"limits": limits, "per_peer": {}})
        config = uvicorn.Config(app, http=connection, ws="none", lifespan="on", loop="asyncio", log_config=None,
                                proxy_headers=False, server_header=False, date_header=False,
                                timeout_keep_alive=IDLE_CONNECTION_SEC,
                                limit_concurrency=limits.max_connections + 1)  # uvicorn counts the asking one
        self._server = _Server(config)
        self._thread = threading.Thread(target=self._server.run_until_stopped, args=(sock,), name=name, daemon=True)

    def start(self) -> "UnixAsgiServer":
        """Serve, returning once requests are answered; ``RuntimeError`` if uvicorn did not start."""
        self._thread.start()
        self._server.ready.wait()
        if not self._server.started:
            self._thread.join()
            raise RuntimeError(f"uvicorn did not start: {self._server.error!r}")
        return self

    def stop(self) -> None:
        self._server.request_stop()
        self._thread.join(STOP_WAIT_SEC)
        if self._thread.is_alive():
            raise RuntimeError(f"the server thread {self._thread.name} did not end within {STOP_WAIT_SEC:g} s")
