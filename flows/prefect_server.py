"""The Prefect server of one tbflow command: started at once, in its own session, dying with tbflow.

Prefect's own "ephemeral" mode starts its server lazily, at the first flow run (so its 5–13 s
start-up comes after planning instead of next to it), in tbflow's process group (so a terminal's
Ctrl-C kills it before tbflow has finished stopping, and every buffered event then fails with a
ConnectError traceback), and stops it only from ``atexit`` (so ``kill -9`` of tbflow leaves a
200 MB server running for good, holding the SQLite database).

``start()`` instead binds a free 127.0.0.1 port, points ``PREFECT_API_URL`` at it (before
Prefect is imported, so Prefect never starts its own) and launches ``flows.server_process`` on
that socket: in a new session, with a pipe from tbflow that tells it when tbflow is gone (see
that module), its output in ``PREFECT_HOME/tbflow-command-server.log``. Planning, the Docker
preflight and the imports run while the server starts; ``wait_ready()`` blocks only right before
the flow run. When ``PREFECT_API_URL`` is already set, that server is used and only the guard
process is started. See README.md, "Prefect" and "Stopping".
"""

from __future__ import annotations

import atexit
import os
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from flows import shared_server
from flows.embedded_prefect import SERVER_ENV
from flows.server_health import wait_healthy
from flows.shared_server import SharedServer
from flows.socket_peer import UntrustedPeer

STOP_WAIT_SEC = 15.0
#: in PREFECT_HOME: what the per-command server and its guard print (Prefect's own logging at its
#: shutdown, e.g. "Error flushing events" on a loaded machine, is not the user's terminal's business)
COMMAND_SERVER_LOG = "tbflow-command-server.log"
READY_TIMEOUT_SEC = 120.0


@dataclass
class LocalServer:
    """tbflow's companion process: the embedded server (when ``api_url`` is ours) and the guard."""

    process: subprocess.Popen
    api_url: str | None
    own_server: bool
    log: Path | None = None
    announced: set[str] = field(default_factory=set)
    ready: bool = False

    def wait_ready(self, timeout: float = READY_TIMEOUT_SEC) -> None:
        """Block until the server answers ``/health``; raise ``RuntimeError`` if it cannot start."""
        if not self.own_server:
            return
        assert self.api_url is not None  # ours

        def gone() -> str | None:
            if self.process.poll() is None:
                return None
            return (f"the embedded Prefect server exited with code {self.process.returncode} while starting "
                    f"(its output: {self.log}; set PREFECT_API_URL to use a running server instead)")

        wait_healthy(self.api_url, timeout, gone,
                     f"the embedded Prefect server did not answer within {timeout:.0f} s (its output: {self.log})")
        self.ready = True

    def watch_job_dir(self, job_dir: str | os.PathLike) -> None:
        """Tell the guard which job's containers to remove if tbflow dies without stopping."""
        path = str(Path(job_dir).resolve())
        if path not in self.announced:
            self.announced.add(path)
            self._send(f"dir {path}\n")

    def stop(self, clean: bool = True) -> None:
        """Stop the companion; ``clean`` says tbflow removed its containers itself.

        A server that never answered (tbflow exits before its job ran, e.g. on bad input) is
        terminated rather than waited for: it would only finish starting to then stop.
        """
        if self.process.poll() is None:
            if self.own_server and not self.ready:
                self.process.kill()
            elif clean:
                self._send("bye\n")
            try:
                if self.process.stdin is not None:
                    self.process.stdin.close()
            except OSError:
                pass
            try:
                self.process.wait(timeout=STOP_WAIT_SEC)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()

    def _send(self, line: str) -> None:
        assert self.process.stdin is not None  # started with stdin=PIPE
        try:
            self.process.stdin.write(line.encode())
            self.process.stdin.flush()
        except (OSError, ValueError):  # the guard is gone; nothing left to tell it
            pass


_current: LocalServer | SharedServer | None = None


def current() -> LocalServer | SharedServer | None:
    return _current


def start(shared: bool = False) -> LocalServer | SharedServer:
    """Start the companion process (and the embedded server unless ``PREFECT_API_URL`` is set).

    ``shared`` (the CLI's default, ``TBFLOW_SERVER_IDLE_SEC`` > 0): attach to the warm server of
    this ``PREFECT_HOME`` instead (flows/shared_server.py), starting it when none runs; a warm
    server of another tbflow/Prefect version falls back to a server of this command's own.
    """
    global _current
    if _current is not None:
        return _current
    configured = os.environ.get("PREFECT_API_URL")
    if shared and not configured:
        try:
            _current = shared_server.attach(shared_server.idle_sec(), SERVER_ENV)
        except UntrustedPeer as exc:  # said once, as it may be an attack (flows/socket_peer.py)
            print(f"tbflow: warning: {exc}; this command starts a Prefect server of its own", file=sys.stderr,
                  flush=True)
        except (shared_server.VersionMismatch, RuntimeError):  # not shareable: one of our own, as before
            pass
        else:
            atexit.register(_current.stop)
            return _current
    sock = None
    args = [sys.executable, "-m", "flows.server_process", str(os.getpid())]
    env = dict(os.environ)
    if not configured:
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        sock.listen(128)
        sock.set_inheritable(True)
        args.append(str(sock.fileno()))
        api_url = f"http://127.0.0.1:{sock.getsockname()[1]}/api"
        os.environ["PREFECT_API_URL"] = api_url
        env.update(SERVER_ENV)
    else:
        api_url = configured
    root = str(Path(__file__).resolve().parents[1])
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    log = shared_server.log_path(COMMAND_SERVER_LOG)
    with open(log, "ab") as out:
        process = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=out, stderr=subprocess.STDOUT, env=env,
                                   cwd=os.getcwd(), start_new_session=True, pass_fds=(sock.fileno(),) if sock else ())
    if sock is not None:
        sock.close()  # the server holds it now
    _current = LocalServer(process, api_url, own_server=sock is not None, log=log)
    # Registered before Prefect is imported, so it runs after Prefect's own atexit handlers
    # (LIFO): buffered events and logs reach the server before it stops.
    atexit.register(_current.stop)
    return _current
