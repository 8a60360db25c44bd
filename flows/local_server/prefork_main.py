"""A process that has already imported Prefect and the job flow, forking one child per command.

Why: with the warm server (flows/local_server/warm_server_main.py) running, what is left of a small job's wall
time before its first container is the command importing Prefect, pydantic's models and the job
flow: 1.5–3 s of CPU per command here, as much as the Docker work of three trivial trials
(bench/RESULTS.md, "Cold start"). This process pays it once. A ``tbflow run``/``resume``
(flows/local_server/prefork_client.py) hands it its argv, working dir, environment and its stdin/stdout/stderr;
it forks, and the child runs the command exactly as the command would have: same code, same
terminal, same exit code, which the command then exits with.

Run as ``python -m flows.local_server.prefork_main KEY IDLE_SEC`` (flows/local_server/prefork_client.py starts
it in a session of its own, with the warm server's allowlisted environment: no model API key stays in a process
that outlives the command). It listens on the abstract ``SOCK_SEQPACKET`` socket
``\\0tbflow-prefork-KEY``; KEY hashes everything an import may have captured (uid,
``PREFECT_HOME``, every ``PREFECT_*`` variable, the interpreter, and the size and mtime of every
tbflow source file), so an edited checkout or another configuration never runs in a stale one.
Only the same uid is served (``SO_PEERCRED``); the command, for its part, sends nothing until it
has checked that the listener is this user's prefork of its key (flows/local_server/socket_peer.py), as any
local user could hold an abstract socket name.

The protocol, one message each:

- command -> ``{"argv", "cwd", "env"}`` as JSON, with its fds 0, 1, 2 attached (``SCM_RIGHTS``);
- prefork -> ``pid N`` once the child runs (``stop`` as a request instead: exit now);
- prefork -> ``exit CODE`` when the child ended (its exit code, 128 + N if killed by signal N).

Signals: the command forwards SIGINT/SIGTERM/SIGHUP to the child (flows/local_server/prefork_client.py), which
handles them as any command does (flows/cli/stopping.py). If the command dies (``kill -9``), its
connection reaches EOF here and the child's process group gets SIGKILL: the command is gone
as it would have been, and the warm server's guard, which the child attached to, removes its
containers.

The process stays single-threaded until it forks (checked at start), so the child inherits no
lock held by another thread. It exits after ``IDLE_SEC`` without a command, when
``PREFECT_HOME`` is removed, or on ``stop``.
"""

from __future__ import annotations

import io
import json
import os
import select
import signal
import socket
import sys
import threading
import time

from flows.local_server.fast_exit import exit_code, finish
from flows.local_server.prefork_client import socket_name
from flows.local_server.socket_peer import same_user

MAX_MESSAGE = 1 << 20
POLL_SEC = 1.0


def _preload() -> None:
    """Import what every run imports, including what Prefect imports only when a flow starts."""
    import fastapi.encoders  # noqa: F401  (Prefect serialises flow parameters with it)
    import prefect.flow_engine  # noqa: F401
    import prefect.task_engine  # noqa: F401

    import flows.cli.console  # noqa: F401
    import flows.cli.main  # noqa: F401
    import flows.job_flow  # noqa: F401
    import flows.job.job_plan  # noqa: F401
    import flows.local_server.command_server  # noqa: F401
    import tasks_lib.container.docker_client  # noqa: F401
    import tasks_lib.store.remote_store  # noqa: F401


def _exit_code(status: int) -> int:
    return os.waitstatus_to_exitcode(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


class Prefork:
    """The accept loop: one child per command, its exit code sent back, its group killed if the
    command disappears."""

    def __init__(self, listener: socket.socket, idle_sec: float, home: str | None) -> None:
        self.listener = listener
        self.idle_sec = idle_sec
        self.home = home
        #: child pid -> its command's connection (None once the command is gone)
        self.children: dict[int, socket.socket | None] = {}
        self.last_active = time.monotonic()
        self.wake_r, self.wake_w = os.pipe()
        os.set_blocking(self.wake_w, False)
        signal.set_wakeup_fd(self.wake_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so the wakeup fd is written

    def serve(self) -> None:
        """Until idle, ``PREFECT_HOME`` gone or ``stop``; a stop closes the door at once but
        waits for the running children, whose commands wait for their exit codes."""
        stopping = False
        while not self._should_stop(stopping):
            conns = [c for c in self.children.values() if c is not None]
            watched: list[socket.socket | int] = [self.wake_r, *conns]
            if not stopping:
                watched.append(self.listener)
            ready, _, _ = select.select(watched, [], [], POLL_SEC)
            if self.wake_r in ready:
                os.read(self.wake_r, 512)
            self._reap()
            for conn in conns:
                if conn in ready:  # the command sends nothing after its request: this is EOF
                    self._command_gone(conn)
            if not stopping and self.listener in ready and self._accept():
                stopping = True
                self.listener.close()

    def _should_stop(self, stopping: bool) -> bool:
        if self.children:
            self.last_active = time.monotonic()
            return False
        if stopping:
            return True
        if self.home and not os.path.isdir(self.home):
            return True
        return time.monotonic() - self.last_active > self.idle_sec

    def _accept(self) -> bool:
        """Serve one connection; True when it asked this process to stop."""
        conn, _ = self.listener.accept()
        try:
            if not same_user(conn):
                conn.close()
                return False
            conn.settimeout(10)
            data, fds, _, _ = socket.recv_fds(conn, MAX_MESSAGE, 3)
            conn.settimeout(None)
        except OSError:
            conn.close()
            return False
        if data == b"stop":
            conn.close()
            return True
        try:
            request = json.loads(data)
            argv, cwd, env = list(request["argv"]), str(request["cwd"]), dict(request["env"])
        except (ValueError, KeyError, TypeError):
            request = None
        if request is None or len(fds) != 3 or select.select([conn], [], [], 0)[0]:
            # (readable here means EOF: the command gave up waiting, e.g. while this process was
            # still importing, and runs the job itself)
            for fd in fds:
                os.close(fd)
            conn.close()
            return False
        pid = os.fork()
        if pid == 0:  # the child never returns from here
            _child(self, conn, fds, argv, cwd, env)
        for fd in fds:
            os.close(fd)
        try:
            os.setpgid(pid, pid)  # also done by the child: whichever runs first
        except OSError:
            pass
        self.children[pid] = conn
        self.last_active = time.monotonic()
        print(f"tbflow prefork: pid {pid} runs tbflow {' '.join(argv[1:])} (cwd {cwd})", file=sys.stderr, flush=True)
        try:
            conn.send(f"pid {pid}".encode())
        except OSError:
            self._command_gone(conn)
        return False

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            if conn is not None:
                try:
                    conn.send(f"exit {_exit_code(status)}".encode())
                except OSError:
                    pass
                conn.close()
            self.last_active = time.monotonic()

    def _command_gone(self, conn: socket.socket) -> None:
        """The command died without its child ending: end the child as the command ended."""
        for pid, c in list(self.children.items()):
            if c is conn:
                self.children[pid] = None
                conn.close()
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass


def _child(prefork: Prefork, conn: socket.socket, fds: list[int], argv: list[str], cwd: str,
           env: dict[str, str]) -> None:
    """Become the command: its fds, working dir, environment and argv; run it; exit with its code."""
    code = 1
    try:
        os.setpgid(0, 0)
        signal.set_wakeup_fd(-1)
        for sig in (signal.SIGCHLD, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        prefork.listener.close()
        os.close(prefork.wake_r)
        os.close(prefork.wake_w)
        for c in prefork.children.values():
            if c is not None:
                c.close()
        conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        # the stream objects were made for the log file this process started with: buffer as
        # Python would have for the command's own stdout (line by line on a terminal)
        for stream, line_buffering in ((sys.stdout, os.isatty(1)), (sys.stderr, True)):
            if isinstance(stream, io.TextIOWrapper):
                stream.reconfigure(line_buffering=line_buffering)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        import random

        random.seed()  # a forked child would otherwise repeat its siblings' draws (--order random)
        sys.argv = argv
        from flows.local_server import prefork_client
        prefork_client.IN_PREFORK_CHILD = True
        from flows.cli.main import main

        try:
            main()
            code = 0
        except SystemExit as exc:
            code = exit_code(exc, print_message=True)
        except BaseException:  # noqa: BLE001 (printed as Python would, then the child ends)
            import traceback

            traceback.print_exc()
            code = 1
        for t in threading.enumerate():  # what Python's own exit would wait for
            if t is not threading.main_thread() and not t.daemon:
                t.join()
        finish(code)
    except BaseException:  # noqa: BLE001 (becoming the command failed: say why where the command shows it)
        import traceback

        traceback.print_exc()
    finally:
        os._exit(code)


def main(argv: list[str]) -> int:
    key, idle = argv[0], float(argv[1])
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
    try:
        listener.bind(socket_name(key))
    except OSError:  # another one was started at the same moment
        return 0
    # listening before importing: a command that comes meanwhile waits for the imports (which it
    # would otherwise do itself) instead of starting yet another prefork
    listener.listen(64)
    _preload()
    if threading.active_count() != 1:
        print(f"tbflow prefork: not single-threaded after imports ({threading.enumerate()}); not serving",
              file=sys.stderr)
        return 1
    print(f"tbflow prefork {os.getpid()}: ready at {time.strftime('%Y-%m-%dT%H:%M:%S')}", file=sys.stderr, flush=True)
    Prefork(listener, idle, os.environ.get("PREFECT_HOME")).serve()
    print(f"tbflow prefork {os.getpid()}: stopped at {time.strftime('%Y-%m-%dT%H:%M:%S')}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
