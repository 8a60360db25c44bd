"""Attach a tbflow command to the local Prefect server (flows/local_server/warm_server_main.py), starting it
when none runs for this ``PREFECT_HOME``.

The command keeps one connection to the server's guard socket for its whole life: ``dir JOB_DIR``
lines tell the server which job's containers to remove should the command die without ``bye``
(docs/running-jobs.md, "Stopping"). ``TBFLOW_SERVER_IDLE_SEC`` (default 600) is how long the server waits
for the next command; ``0`` stops it as soon as the last command detaches (a server per command in
effect). A command using a configured ``PREFECT_API_URL`` attaches the same way to a guard of its
own, which starts no Prefect server.

The command sends nothing and believes no ``ok API_URL`` until the socket's listener is known to be
this user's server of this key (flows/local_server/socket_peer.py): any local user could hold the
abstract name and hand out an API URL of its own, to which the command would send its flows and
logs. Another holder raises ``UntrustedPeer``; ``run``/``resume`` then start a server under a name
of their own (flows/local_server/command_server.py).
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from flows.local_server.warm_server_main import daemon_version, socket_name
from flows.local_server.server_health import wait_healthy
from flows.local_server.socket_peer import UntrustedPeer, check_server, peer_of

DEFAULT_IDLE_SEC = 600.0
#: how long a command waits at its end for a server that stops with it (idle 0): past the hard
#: exit the server gives its own shutdown (warm_server_main.HARD_EXIT_AFTER_SEC, 20 s)
STOP_WAIT_SEC = 25.0
#: started as ``python -m DAEMON_MODULE KEY IDLE_SEC [API_URL]``, checked as such (socket_peer)
DAEMON_MODULE = "flows.local_server.warm_server_main"
ENV_IDLE = "TBFLOW_SERVER_IDLE_SEC"
ATTACH_TIMEOUT_SEC = 20.0
LOG_NAME = "tbflow-server.log"


def idle_sec() -> float:
    """The idle timeout from the environment; ``0`` (or less): stop when the last command detaches."""
    raw = os.environ.get(ENV_IDLE, "")
    try:
        return float(raw) if raw.strip() else DEFAULT_IDLE_SEC
    except ValueError:
        return DEFAULT_IDLE_SEC


def prefect_home() -> Path:
    return Path(os.environ.get("PREFECT_HOME") or Path.home() / ".prefect").expanduser().resolve()


def server_key(configured: str | None = None, idle: float | None = None, versioned: bool = False) -> str:
    """One server per user, Prefect database, Docker engine (the engine its guard cleans up) and
    idle timeout (``0``, "nothing of my command outlives it", never attaches to a warm server that
    would); with a configured ``PREFECT_API_URL``, one guard per such URL. ``versioned``: the key
    of this version's own server, for when another tbflow, Prefect or Python holds the plain one."""
    parts = [str(os.getuid()), str(prefect_home()), os.environ.get("PREFECT_API_DATABASE_CONNECTION_URL", ""),
             os.environ.get("PREFECT_SERVER_DATABASE_CONNECTION_URL", ""), os.environ.get("DOCKER_HOST", ""),
             configured or "", f"{idle_sec() if idle is None else idle:g}", daemon_version() if versioned else ""]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


class SharedServer:
    """This command's attachment to the local server (or, ``own_server`` False, to the guard of a
    configured server)."""

    def __init__(self, conn: socket.socket, api_url: str, own_server: bool = True, idle: float = DEFAULT_IDLE_SEC) -> None:
        self.conn = conn
        self.api_url = api_url
        self.own_server = own_server
        #: a server that stops with its last command (idle 0): its pid, to wait for at ``stop``
        self.stops_with_us = peer_of(conn).pid if idle <= 0 else None
        self.announced: set[str] = set()
        self.ready = False

    def wait_ready(self, timeout: float = 120.0) -> None:
        """Block until the server answers ``/health``; raise ``RuntimeError`` if it died."""
        if not self.own_server:  # a configured server: the user's to run
            self.ready = True
            return
        log = prefect_home() / LOG_NAME
        wait_healthy(self.api_url, timeout,
                     lambda: None if self._connected() else f"the local Prefect server exited while starting (see {log})",
                     f"the local Prefect server did not answer within {timeout:.0f} s (see {log})")
        self.ready = True

    def watch_job_dir(self, job_dir: str | os.PathLike) -> None:
        path = str(Path(job_dir).resolve())
        if path not in self.announced:
            self.announced.add(path)
            self._send(f"dir {path}\n")

    def stop(self, clean: bool = True) -> None:
        """Detach; ``clean`` says this command removed its containers itself. The server stays
        for the next command until its idle timeout; with ``0`` it stops now, and the command waits
        for it (as long as no other command is attached), so what the server still held (task runs
        its services batch) is in the database when the command has exited."""
        if clean:
            self._send("bye\n")
        try:
            self.conn.close()
        except OSError:
            pass
        if self.stops_with_us is not None:
            _wait_for_exit(self.stops_with_us, STOP_WAIT_SEC)

    def _send(self, line: str) -> None:
        try:
            self.conn.sendall(line.encode())
        except OSError:
            pass

    def _connected(self) -> bool:
        try:
            return self.conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT) != b""
        except BlockingIOError:
            return True
        except OSError:
            return False


def _wait_for_exit(pid: int, timeout: float) -> None:
    """Until process ``pid`` (the server) has exited, another command attached to it, or ``timeout``.
    The server counts this command as attached until it has read its goodbye, so an attached count
    means another command only once the server was seen with none."""
    deadline = time.monotonic() + timeout
    seen_idle = False
    while time.monotonic() < deadline and not _exited(pid):
        info = _peek_status()
        if info is None or info.get("pid") != pid or info.get("attached", 0) == 0:
            seen_idle = True  # stopping (its socket is closed), or idle and about to stop
        elif seen_idle:
            return  # another command attached: the server stays for it
        time.sleep(0.05)


def _exited(pid: int) -> bool:
    try:  # our own child (the command that started the server): reap it, or it lingers as a zombie
        return os.waitpid(pid, os.WNOHANG)[0] == pid
    except ChildProcessError:
        pass
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return True
    return state in ("Z", "X")


def _peek_status() -> dict | None:
    try:
        return status()
    except (UntrustedPeer, ValueError):
        return None


def _ask(first_line: str, timeout: float = 5.0, key: str | None = None) -> tuple[socket.socket, str] | None:
    """Send ``first_line`` to the running server; ``None`` when there is none (or it is stopping).
    ``UntrustedPeer`` when another process holds its socket name (nothing was sent to it)."""
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    key = key or server_key()
    try:
        conn.settimeout(timeout)
        conn.connect(socket_name(key))
        check_server(conn, DAEMON_MODULE, key)
        conn.sendall(first_line.encode())
        reply = b""
        while not reply.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                raise ConnectionError("closed")
            reply += chunk
        conn.settimeout(None)
        return conn, reply.decode().rstrip("\n")
    except UntrustedPeer:
        conn.close()
        raise
    except OSError:
        conn.close()
        return None


#: what the warm server inherits from the command that starts it; it outlives that command and
#: serves others, so it gets no model API key or other secret of the first one's environment
_PASSED_PREFIXES = ("PREFECT_", "DOCKER_", "TBFLOW_", "LC_", "XDG_")
_PASSED = {"PATH", "HOME", "USER", "LOGNAME", "LANG", "TZ", "TMPDIR", "PYTHONPATH", "VIRTUAL_ENV", "DO_NOT_TRACK"}


def daemon_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k in _PASSED or k.startswith(_PASSED_PREFIXES)}
    env.pop("PREFECT_API_URL", None)
    env.pop("PREFECT_API_KEY", None)
    return env


def log_path(log_name: str) -> Path:
    """``PREFECT_HOME/LOG_NAME``, where a server tbflow starts writes its output (appended; started
    afresh past 10 MiB), so Prefect's own logging never reaches the user's terminal."""
    home = prefect_home()
    home.mkdir(parents=True, exist_ok=True)
    log = home / log_name
    if log.is_file() and log.stat().st_size > 10 * 2**20:
        log.unlink()
    return log


def spawn_background(module: str, args: list[str], log_name: str, extra_env: dict[str, str] | None = None) -> None:
    """Start ``python -m MODULE ARGS`` in a session of its own, outliving this command, with the
    allowlisted environment (``daemon_env``) and its output appended to ``PREFECT_HOME/LOG_NAME``
    (started afresh past 10 MiB). The warm server starts so."""
    home = prefect_home()
    root = str(Path(__file__).resolve().parents[1])
    env = daemon_env()
    env.update(extra_env or {})
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    with open(log_path(log_name), "ab") as out:
        subprocess.Popen([sys.executable, "-m", module, *args], stdin=subprocess.DEVNULL, stdout=out,
                         stderr=subprocess.STDOUT, env=env, cwd=str(home), start_new_session=True, close_fds=True)


class VersionMismatch(RuntimeError):
    """The server at a key is another tbflow's (or another Prefect's or Python's)."""


def attach(idle: float, server_env: dict[str, str], configured: str | None = None,
           private: bool = False) -> SharedServer:
    """Attach to the local server, starting it if needed; with ``configured`` (a ``PREFECT_API_URL``
    the user set) to a guard of that URL instead. When another version's server holds the key,
    this version gets one of its own; ``private``: one under a name of this command's own (its
    socket name was taken by a stranger), which stops with it. Raise ``RuntimeError`` when none
    starts, ``UntrustedPeer`` when a stranger holds the name (nothing was sent to it)."""
    if private:
        key = hashlib.sha256(f"{server_key(configured, idle)}-{os.getpid()}-{time.time_ns()}".encode()).hexdigest()
        return _attach(key[:20], 0, server_env, configured)
    try:
        return _attach(server_key(configured, idle), idle, server_env, configured)
    except VersionMismatch:
        return _attach(server_key(configured, idle, versioned=True), idle, server_env, configured)


def _attach(key: str, idle: float, server_env: dict[str, str], configured: str | None) -> SharedServer:
    hello = f"attach {daemon_version()}\n"
    deadline = time.monotonic() + ATTACH_TIMEOUT_SEC
    spawned = False
    while True:
        answer = _ask(hello, key=key)
        if answer is not None:
            conn, reply = answer
            verb, _, rest = reply.partition(" ")
            if verb == "ok":
                if configured is None:
                    os.environ["PREFECT_API_URL"] = rest
                return SharedServer(conn, rest, own_server=configured is None, idle=idle)
            conn.close()
            raise VersionMismatch(rest)
        if not spawned or time.monotonic() > deadline:
            if spawned:
                raise RuntimeError(f"the local Prefect server did not start (see {prefect_home() / LOG_NAME})")
            args = [key, str(idle)] if configured is None else [key, "0", configured]
            spawn_background(DAEMON_MODULE, args, LOG_NAME, server_env)
            spawned = True
        time.sleep(0.02)


def status() -> dict | None:
    """The running warm server's status, or ``None``; ``UntrustedPeer`` as ``_ask``."""
    answer = _ask("status\n")
    if answer is None:
        return None
    answer[0].close()
    return json.loads(answer[1])


def request_stop() -> int | None:
    """Ask the warm server to stop once no command is attached; the number attached, or ``None``;
    ``UntrustedPeer`` as ``_ask``."""
    answer = _ask("stop\n")
    if answer is None:
        return None
    answer[0].close()
    return int(answer[1].split()[1])
