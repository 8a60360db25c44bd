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
"""

from __future__ import annotations

import asyncio
import logging
import socket
import threading

import uvicorn
from starlette.types import ASGIApp
from uvicorn.protocols.http.h11_impl import H11Protocol

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

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003 (uvicorn's signature)
        super().__init__(*args, **kwargs)
        self.logger = _log
        self.access_log = False

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

    def __init__(self, sock: socket.socket, app: ASGIApp, name: str) -> None:
        config = uvicorn.Config(app, http=_Connection, ws="none", lifespan="on", loop="asyncio",
                                log_config=None, proxy_headers=False, server_header=False, date_header=False,
                                timeout_keep_alive=IDLE_CONNECTION_SEC)
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
