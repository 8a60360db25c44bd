"""tbflow's local Prefect server: one per ``PREFECT_HOME``, shared by the tbflow commands that run
there, stopping itself once no command has been attached for ``TBFLOW_SERVER_IDLE_SEC`` (``0``: as
soon as the last one detaches, a server per command in effect). It is the only server process
tbflow starts, and the guard of every command attached to it (flows/local_server/guard.py).

Why it exists: starting Prefect's server costs about 5 s of CPU per command (importing its server
code; bench/RESULTS.md, "Cold start"), three times the Docker work of a small job. A command that
finds this server running skips that; the first command of a session starts it (in the
background, in a session of its own) and the next ones reuse it.

Run as ``python -m flows.local_server.warm_server_main KEY IDLE_SEC [API_URL]`` by
``flows.local_server.warm_server``, in a session of its own (a terminal's Ctrl-C never reaches it),
with its output in ``PREFECT_HOME/tbflow-server.log``. With ``API_URL`` (a command that uses a
configured ``PREFECT_API_URL``) it starts no Prefect server: it is only the guard, and answers
with that URL.

Commands reach it on the abstract unix socket ``\\0tbflow-server-KEY`` (KEY hashes the uid,
``PREFECT_HOME``, the database URL and the idle timeout, so each Prefect database has its own
server, flows/local_server/warm_server.py ``server_key``; an abstract
socket leaves no stale file behind when the process dies). Only processes of the same uid are
answered (``SO_PEERCRED``), and commands check that the listener is this server
(flows/local_server/socket_peer.py) before they send or believe anything. A connection's first
line says what it wants:

- ``attach VERSION`` -> ``ok API_URL`` (or ``mismatch VERSION`` when tbflow/Prefect/Python differ).
  The connection then is that command's guard pipe (``dir JOB_DIR``, ``bye``;
  flows/local_server/guard.py): when it reaches EOF without ``bye`` (the command was killed, even
  with ``kill -9``), the containers of its job dirs are removed, under each job's lock.
- ``status`` -> one JSON line (pid, API URL, attached commands, idle timeout).
- ``stop`` -> stop as soon as no command is attached.

Idle shutdown is race-free against a command attaching at the same moment: the decision and every
``ok`` are taken under one lock, and the listening socket is closed in that same step, so a
command either got ``ok`` before (and is counted) or sees its connection refused or closed and
starts a new server.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time

from flows.local_server.guard import Guard
from flows.local_server.socket_peer import same_user

POLL_SEC = 0.5
#: how long a new server waits for its first command (the one that started it) whatever its idle
#: timeout: with ``0`` it would otherwise stop before that command could attach
FIRST_ATTACH_GRACE_SEC = 30.0
#: a stuck shutdown must not keep the process alive: its commands are gone when this matters
HARD_EXIT_AFTER_SEC = 20.0


def prefect_app_server():
    """Prefect's server app as uvicorn runs it for ``prefect server start`` (the API only)."""
    import uvicorn

    config = uvicorn.Config("prefect.server.api.server:create_app", factory=True, log_level="error",
                            lifespan="on")
    return uvicorn.Server(config)


def daemon_version() -> str:
    """What must match for a command to use this server: tbflow, Prefect and the interpreter."""
    from importlib.metadata import version

    from tasks_lib import __version__

    return f"tbflow-{__version__}/prefect-{version('prefect')}/{sys.executable}"


def socket_name(key: str) -> bytes:
    return b"\0tbflow-server-" + key.encode()


class Daemon:
    """The guard socket's side of the warm server: who is attached, and when to stop."""

    def __init__(self, listener: socket.socket, api_url: str, idle_sec: float, version: str) -> None:
        self.listener = listener
        self.api_url = api_url
        self.idle_sec = idle_sec
        self.version = version
        self.attached = 0
        self.idle_since = self.started = time.monotonic()
        self.ever_attached = False
        self.stopping = False
        self.stop_requested = False
        self._lock = threading.Lock()
        self.home = os.environ.get("PREFECT_HOME")

    def accept_forever(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:  # closed by the idle shutdown
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        with conn:
            if not same_user(conn):
                return
            stream = conn.makefile("r", encoding="utf-8", errors="replace")
            first = stream.readline().rstrip("\n")
            cmd, _, arg = first.partition(" ")
            if cmd == "status":
                conn.sendall((json.dumps(self.status()) + "\n").encode())
            elif cmd == "stop":
                with self._lock:
                    self.stop_requested = True
                conn.sendall(f"stopping {self.attached}\n".encode())
            elif cmd == "attach":
                self._attach(conn, stream, arg)

    def _attach(self, conn: socket.socket, stream, version: str) -> None:
        with self._lock:
            if self.stopping:
                return  # closed unanswered: the command starts a new server
            if version != self.version:
                conn.sendall(f"mismatch {self.version}\n".encode())
                return
            self.attached += 1
            self.ever_attached = True
            conn.sendall(f"ok {self.api_url}\n".encode())
        guard = Guard(stream)
        try:
            guard.read_pipe()
            if guard.tbflow_died():
                guard.reap()
        finally:
            with self._lock:
                self.attached -= 1
                self.idle_since = time.monotonic()

    def status(self) -> dict:
        return {"pid": os.getpid(), "api_url": self.api_url, "attached": self.attached,
                "idle_timeout_sec": self.idle_sec, "version": self.version}

    def should_stop(self) -> bool:
        """True once (and then for good) when nobody is attached and the idle time is over,
        ``stop`` was asked, or ``PREFECT_HOME`` was deleted; closes the socket in the same step."""
        with self._lock:
            if self.stopping:
                return True
            if self.attached:
                return False
            if not self.ever_attached and time.monotonic() - self.started < FIRST_ATTACH_GRACE_SEC \
                    and not self.stop_requested:
                return False
            home_gone = self.home is not None and not os.path.isdir(self.home)
            idle = time.monotonic() - self.idle_since >= self.idle_sec
            if not (idle or self.stop_requested or home_gone):
                return False
            self.stopping = True
            self.listener.close()
            return True


def main(argv: list[str]) -> int:
    key, idle_sec = argv[1], float(argv[2])
    configured = argv[3] if len(argv) > 3 else None
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        listener.bind(socket_name(key))
    except OSError:  # another command started this server a moment ago: it serves them both
        return 0
    listener.listen(64)
    if configured is not None:  # only the guard of commands using a configured server
        _guard_only(Daemon(listener, configured, idle_sec, daemon_version()))
        return 0
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(128)  # requests queue here while Prefect's server code is still importing
    api_url = f"http://127.0.0.1:{tcp.getsockname()[1]}/api"
    os.environ["PREFECT_API_URL"] = api_url
    daemon = Daemon(listener, api_url, idle_sec, daemon_version())
    threading.Thread(target=daemon.accept_forever, name="tbflow-guard-socket", daemon=True).start()
    print(f"tbflow server {os.getpid()}: {api_url}, stops after {idle_sec:.0f} s without a command", flush=True)
    server = prefect_app_server()

    def stop_when_idle() -> None:
        while not daemon.should_stop():
            time.sleep(POLL_SEC)
        server.should_exit = True
        threading.Timer(HARD_EXIT_AFTER_SEC, os._exit, (1,)).start()

    threading.Thread(target=stop_when_idle, name="tbflow-idle", daemon=True).start()
    server.run(sockets=[tcp])
    print(f"tbflow server {os.getpid()}: stopped", flush=True)
    os._exit(0)


def _guard_only(daemon: "Daemon") -> None:
    print(f"tbflow guard {os.getpid()}: for {daemon.api_url}", flush=True)
    threading.Thread(target=daemon.accept_forever, name="tbflow-guard-socket", daemon=True).start()
    while not daemon.should_stop():  # True only once every attached command's guard has finished
        time.sleep(POLL_SEC)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
