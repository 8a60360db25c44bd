"""The Prefect server of a tbflow command: started at once, before Prefect is imported.

Prefect's own "ephemeral" mode starts its server lazily, at the first flow run (so its 5–13 s
start-up comes after planning instead of next to it), in tbflow's process group (so a terminal's
Ctrl-C kills it before tbflow has finished stopping, and every buffered event then fails with a
ConnectError traceback), and stops it only from ``atexit`` (so ``kill -9`` of tbflow leaves a
200 MB server running for good, holding the SQLite database).

``start()`` instead starts the command's own server process (flows/local_server/server_main.py)
in a session of its own, on a loopback port the command bound (handed down as a child's fd), and
points ``PREFECT_API_URL`` at it before Prefect is imported, so Prefect never starts its own.
Planning, the Docker preflight and the imports run while the server starts; ``wait_ready()``
blocks only right before the flow run. The process's stdin is the command's guard pipe for its
whole life, and the process stops with the command (docs/local-server.md). With
``PREFECT_API_URL`` already set (a server the user runs, e.g. ``tbflow server start``), that
server is used as is and the process is only the guard.
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
from pathlib import Path

from flows.local_server.prefect_settings import SERVER_ENV
from flows.local_server.server_health import wait_healthy

#: how long a command waits at its end for its server to store what it still holds and exit:
#: past the hard exit the server gives its own shutdown (server_main.HARD_EXIT_AFTER_SEC, 20 s)
STOP_WAIT_SEC = 25.0
LOG_NAME = "tbflow-server.log"
#: the API URL of the server ``tbflow server start`` runs for this ``PREFECT_HOME`` (flows/cli/server_cli.py)
STARTED_URL_NAME = "tbflow-server.url"
MODULE = "flows.local_server.server_main"

_current: CommandServer | None = None


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser().resolve()


def log_path() -> Path:
    """``PREFECT_HOME/tbflow-server.log`` (appended; started afresh past 10 MiB), so Prefect's own
    logging never reaches the user's terminal."""
    home = prefect_home()
    home.mkdir(parents=True, exist_ok=True)
    log = home / LOG_NAME
    if log.is_file() and log.stat().st_size > 10 * 2**20:
        log.unlink()
    return log


class CommandServer:
    """This command's server process (``own_server`` False: only the guard of a configured server)."""

    def __init__(self, proc: subprocess.Popen, api_url: str, own_server: bool) -> None:
        self.proc = proc
        self.api_url = api_url
        self.own_server = own_server
        #: a server tbflow runs (its own, or ``tbflow server start``'s): no automation watches its
        #: flow runs, so they need no heartbeats (prefect_settings.no_heartbeats_on)
        self.tbflows = own_server or api_url == started_url()
        self.announced: set[str] = set()

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Block until the server answers ``/health``; ``RuntimeError`` if it died or is late."""
        if not self.own_server:  # a configured server: the user's to run
            return
        log = prefect_home() / LOG_NAME
        wait_healthy(self.api_url, timeout,
                     lambda: None if self.proc.poll() is None else
                     f"the local Prefect server exited while starting (see {log})",
                     f"the local Prefect server did not answer within {timeout:.0f} s (see {log})")

    def watch_job_dir(self, job_dir: str | os.PathLike) -> None:
        path = str(Path(job_dir).resolve())
        if path not in self.announced:
            self.announced.add(path)
            self._send(f"dir {path}\n")

    def stop(self, clean: bool = True, wait: bool = True) -> None:
        """End the guard pipe (``clean``: this command removed its containers itself) and, with
        ``wait``, wait for the process, so what the server still held (task runs its services
        batch) is in the database when the command has exited."""
        if clean:
            self._send("bye\n")
        try:
            self.proc.stdin.close()  # type: ignore[union-attr]
        except OSError:
            pass
        try:
            if wait:
                self.proc.wait(STOP_WAIT_SEC)
        except subprocess.TimeoutExpired:
            pass

    def _send(self, line: str) -> None:
        try:
            self.proc.stdin.write(line.encode())  # type: ignore[union-attr]
            self.proc.stdin.flush()  # type: ignore[union-attr]
        except (OSError, ValueError):
            pass


def started_url() -> str | None:
    """The URL ``tbflow server start`` printed for this ``PREFECT_HOME``, while its server runs."""
    try:
        return (prefect_home() / STARTED_URL_NAME).read_text().strip() or None
    except OSError:
        return None


def current() -> CommandServer | None:
    return _current


def start() -> CommandServer:
    """Start this command's server process (once), or its guard when ``PREFECT_API_URL`` is set."""
    global _current
    if _current is None:
        configured = os.environ.get("PREFECT_API_URL")
        _current = _spawn(None) if configured else _spawn(_bind_loopback())
        # Registered before Prefect is imported, so it runs after Prefect's own atexit handlers
        # (LIFO): buffered events and logs reach the server before it is told to stop.
        atexit.register(_current.stop)
    return _current


def _bind_loopback() -> socket.socket:
    """A listening socket on a free loopback port; requests queue on it while the server imports."""
    tcp = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    tcp.bind(("127.0.0.1", 0))
    tcp.listen(128)
    return tcp


def _spawn(tcp: socket.socket | None) -> CommandServer:
    env = dict(os.environ, **(SERVER_ENV if tcp is not None else {}))
    root = str(Path(__file__).resolve().parents[2])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    args = [sys.executable, "-m", MODULE]
    fds: tuple[int, ...] = ()
    if tcp is not None:
        args += ["--serve", str(tcp.fileno())]
        fds = (tcp.fileno(),)
    with open(log_path(), "ab") as out:
        proc = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, env=env,
                                cwd=str(prefect_home()), start_new_session=True, pass_fds=fds)
    if tcp is None:
        return CommandServer(proc, os.environ["PREFECT_API_URL"], own_server=False)
    api_url = f"http://127.0.0.1:{tcp.getsockname()[1]}/api"
    tcp.close()
    os.environ["PREFECT_API_URL"] = api_url
    return CommandServer(proc, api_url, own_server=True)
