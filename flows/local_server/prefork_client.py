"""Hand a ``tbflow run``/``resume`` to the prefork process (flows/local_server/prefork_main.py) and wait for its end.

With the warm server (``TBFLOW_SERVER_IDLE_SEC`` > 0, no ``PREFECT_API_URL``), the command first
looks for a prefork of its key. If one answers, the command sends it argv, working dir,
environment and fds 0-2, forwards SIGINT/SIGTERM/SIGHUP to the child it names, and exits with
that child's exit code: the job runs as it would have in this process, minus importing Prefect.
If none answers, the command runs the job itself, as before, and starts one for the next command
as it exits.
Anything that goes wrong before the child runs also leaves the command to run the job itself.
``TBFLOW_PREFORK=0`` turns it off.

Nothing is sent before the listener is known to be this user's prefork of this key
(flows/local_server/socket_peer.py: ``SO_PEERCRED`` uid, then its command line): the socket name is abstract,
so any local user could hold it. When another process holds it, the command says so in one line on
stderr (someone may be trying to read this user's API keys, and every command now pays the imports)
and runs the job itself.

What differs for the user: Ctrl-Z stops only this process, not the job (the child is in another
process group); everything else (output, colours, Ctrl-C, ``kill``, ``kill -9``, exit codes)
behaves as without it (tests/test_command_handed_to_prefork.py; the terminal's bytes:
tests/test_handed_off_command_prints_the_bytes_and_colours_of_a_direct_one.py).
"""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import signal
import socket
import sys
from pathlib import Path

from flows.local_server.socket_peer import UntrustedPeer, check_server

COMMANDS = ("run", "resume")
ENV_SWITCH = "TBFLOW_PREFORK"  # "0": every command imports Prefect itself
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
LOG_NAME = "tbflow-prefork.log"
PREFORK_MODULE = "flows.local_server.prefork_main"  # started as ``python -m PREFORK_MODULE KEY IDLE_SEC``, checked as such
REPLY_TIMEOUT_SEC = 30.0  # a prefork still importing answers after its imports (seconds; more under load)
ROOT = Path(__file__).resolve().parents[2]

#: set in the prefork's child: it must not hand the command off again, and it re-reads
#: Prefect's settings once the environment is final (``adopt_environment``)
IN_PREFORK_CHILD = False
_TRIED = False  # once per process: the entry point and flows/cli/main.py both ask


def socket_name(key: str) -> bytes:
    """The prefork's abstract unix socket (flows/local_server/prefork_main.py): no file to leave behind."""
    return b"\0tbflow-prefork-" + key.encode()


def prefork_key() -> str:
    """Everything an import may have captured: uid, Prefect's configuration, the interpreter and
    the code (a changed file, a reinstalled package: another key, so a stale process is never used)."""
    from flows.local_server.warm_server import prefect_home

    parts = [str(os.getuid()), str(prefect_home()), sys.executable, sys.version, os.environ.get("DOCKER_HOST", ""),
             os.environ.get("PYTHONPATH", "")]  # the import path a plug-in harness may be found on
    parts += [f"{k}={v}" for k, v in sorted(os.environ.items()) if k.startswith("PREFECT_")]
    parts.append(_code_stamp())
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:20]


def _code_stamp() -> str:
    import sysconfig

    stamp = hashlib.sha256()
    for package in ("flows", "tasks_lib", "harnesses"):
        for dirpath, dirnames, filenames in os.walk(ROOT / package):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(".py"):
                    st = os.stat(os.path.join(dirpath, name))
                    stamp.update(f"{dirpath}/{name}:{st.st_size}:{st.st_mtime_ns}\n".encode())
    site = sysconfig.get_paths()["purelib"]
    stamp.update(f"{site}:{os.stat(site).st_mtime_ns}".encode())  # a package installed or removed
    return stamp.hexdigest()


def try_handoff(argv: list[str]) -> int | None:
    """The command's exit code when a prefork ran it; ``None`` when this process must run it."""
    global _TRIED
    if _TRIED or IN_PREFORK_CHILD or len(argv) < 2 or argv[1] not in COMMANDS or os.environ.get(ENV_SWITCH) == "0":
        return None
    _TRIED = True
    from flows.local_server.prefect_settings import configure_embedded_prefect
    from flows.local_server.warm_server import idle_sec

    configure_embedded_prefect()
    idle = idle_sec()
    if os.environ.get("PREFECT_API_URL") or idle <= 0:
        return None
    key = prefork_key()
    sock = _connect(key)
    if sock is None:
        # started when this command ends: while it runs, its imports would compete with the job
        # for CPU (+1.7 s on the first command of a session here, bench/RESULTS.md)
        atexit.register(_spawn, key, idle)
        return None
    try:
        check_server(sock, PREFORK_MODULE, key)
    except (UntrustedPeer, OSError) as exc:
        sock.close()
        if isinstance(exc, UntrustedPeer):
            print(f"tbflow: warning: {exc}; this command runs without it", file=sys.stderr, flush=True)
        return None
    forward = _Forwarder()
    previous = {sig: signal.signal(sig, forward) for sig in FORWARDED}
    try:
        pid = _start(sock, argv)
    except (OSError, ValueError):
        pid = None
    if pid is None:  # it was stopping, or failed: the next command gets a new one
        sock.close()  # the prefork ends a child it may have started
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        if forward.pending:  # asked to stop before anything started: stop, as the job would have
            return 128 + forward.pending[0]
        atexit.register(_spawn, key, idle)
        return None
    forward.to(pid)
    return _wait(sock, pid)


class _Forwarder:
    """The command's SIGINT/SIGTERM/SIGHUP handler: sent on to the child, or kept until its pid
    is known (a Ctrl-C during the hand-off is not lost, and prints no traceback)."""

    def __init__(self) -> None:
        self.pid: int | None = None
        self.pending: list[int] = []

    def __call__(self, signum: int, frame) -> None:  # noqa: ANN001
        if self.pid is None:
            self.pending.append(signum)
            return
        try:
            os.kill(self.pid, signum)
        except ProcessLookupError:
            pass

    def to(self, pid: int) -> None:
        self.pid = pid
        for signum in self.pending:
            self(signum, None)


def _connect(key: str) -> socket.socket | None:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        sock.connect(socket_name(key))
    except OSError:
        sock.close()
        return None
    return sock


def _start(sock: socket.socket, argv: list[str]) -> int | None:
    payload = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, len(payload) + 65536)
    socket.send_fds(sock, [payload], [0, 1, 2])
    sock.settimeout(REPLY_TIMEOUT_SEC)
    reply = sock.recv(64)
    sock.settimeout(None)
    if not reply.startswith(b"pid "):
        return None
    return int(reply[4:])


def _wait(sock: socket.socket, pid: int) -> int:
    while True:
        message = sock.recv(64)  # a forwarded signal interrupts and resumes it (PEP 475)
        if message.startswith(b"exit "):
            return int(message[5:])
        if not message:
            print(f"tbflow: error: the process that ran this command (pid {pid}) ended without an exit code "
                  f"(see {_log()})", file=sys.stderr)
            return 1


def _log() -> Path:
    from flows.local_server.warm_server import prefect_home

    return prefect_home() / LOG_NAME


def _spawn(key: str, idle: float) -> None:
    """Start the prefork for the next command (this one runs its job itself); it gets no model
    API key, as it outlives this command."""
    from flows.local_server.warm_server import spawn_background

    try:
        spawn_background(PREFORK_MODULE, [key, str(idle)], LOG_NAME)
    except OSError:  # no prefork: every command imports Prefect itself, as it did before
        pass


def request_stop() -> bool:
    """Ask this configuration's prefork to exit; whether one was running."""
    from flows.local_server.prefect_settings import configure_embedded_prefect

    configure_embedded_prefect()  # the same Prefect settings as a run has, so the same key
    key = prefork_key()
    sock = _connect(key)
    if sock is None:
        return False
    try:
        check_server(sock, PREFORK_MODULE, key)
        sock.send(b"stop")
        return True
    except (UntrustedPeer, OSError):
        return False
    finally:
        sock.close()


def adopt_environment() -> None:
    """In the prefork's child: make Prefect read the command's environment, final once the
    server's API URL is set, as a fresh process would have read it at import."""
    if not IN_PREFORK_CHILD:
        return
    from prefect.context import refresh_global_settings_context
    from prefect.logging.configuration import setup_logging

    refresh_global_settings_context()
    setup_logging(incremental=False)
