"""The process tbflow starts next to itself: the embedded Prefect server, and the guard that makes
sure nothing of a run outlives tbflow.

Run as ``python -m flows.local_server.own_server_main PARENT_PID [LISTEN_FD]`` by ``flows.local_server.command_server``, in a
session of its own, so a terminal's Ctrl-C (SIGINT to the whole foreground process group) reaches
tbflow only and the server stays up until tbflow has finished stopping (README.md, "Stopping").

It dies with tbflow, whatever kills tbflow (also ``kill -9``), two ways:

- its stdin is a pipe from tbflow; the kernel closes it when tbflow exits, and EOF without a
  ``bye`` line first means tbflow did not stop cleanly;
- ``PR_SET_PDEATHSIG`` sends it SIGTERM when tbflow dies, in case the pipe was inherited by some
  other process and never reaches EOF.

tbflow writes ``dir <job dir>`` on the pipe when a job starts. When tbflow dies without ``bye``,
the guard removes the containers labelled with that job directory first (the trial containers
would otherwise run on, nobody watching them), then stops the server, which flushes what its
services still hold. Without ``LISTEN_FD`` it is only the guard (tbflow uses a configured
``PREFECT_API_URL`` then).
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import sys
import threading
from pathlib import Path

PR_SET_PDEATHSIG = 1
#: what the job's lock file names as its holder while the guard removes a killed run's containers
GUARD_COMMAND = "tbflow guard: removing the containers of a killed run"
#: a stuck shutdown must not keep the process alive: tbflow is already gone when this matters
HARD_EXIT_AFTER_SEC = 20.0


def _die_with_parent(parent: int) -> None:
    try:
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    except (OSError, AttributeError):  # not Linux: the pipe still works
        pass
    if os.getppid() != parent:  # tbflow died before prctl took effect
        os.kill(os.getpid(), signal.SIGTERM)


class Guard:
    """Reads tbflow's pipe; knows whether tbflow stopped cleanly and which job dirs it ran."""

    def __init__(self, parent: int | None, stream=None) -> None:
        self.parent = parent
        self.stream = stream if stream is not None else sys.stdin
        self.job_dirs: list[str] = []
        self.clean = threading.Event()
        self.gone = threading.Event()
        self._reaping = threading.Lock()
        self._reaped = False

    def read_pipe(self) -> None:
        for line in self.stream:
            cmd, _, arg = line.rstrip("\n").partition(" ")
            if cmd == "dir" and arg:
                self.job_dirs.append(arg)
            elif cmd == "bye":
                self.clean.set()
        self.gone.set()

    def tbflow_died(self) -> bool:
        parent_gone = self.parent is not None and os.getppid() != self.parent
        return not self.clean.is_set() and (self.gone.is_set() or parent_gone)

    def reap(self) -> None:
        """Remove the containers of every job dir tbflow announced (once; a second caller waits
        for the first, so the process never exits in the middle of it).

        Only under the job's lock (tasks_lib/store/job_lock.py): the killed run's lock is stale, so
        the guard takes it over for the removal and gives it back. A run that took the job over
        first (a ``resume`` right after a ``kill -9``) holds it, and its fresh containers are
        left alone: that run removes what its predecessor left itself (tasks_lib/job/job_orphans.py)."""
        with self._reaping:
            if self._reaped:
                return
            self._reaped = True
            for job_dir in self.job_dirs:
                self._reap_job(job_dir)

    @staticmethod
    def _reap_job(job_dir: str) -> None:
        from tasks_lib.container.docker_client import LABEL_JOB_DIR
        from tasks_lib.container.sandbox import remove_job_containers
        from tasks_lib.store.job_lock import JobLock, JobLockedError

        try:
            with JobLock.acquire(Path(job_dir), command=GUARD_COMMAND):
                remove_job_containers(job_dir, label=LABEL_JOB_DIR)
        except JobLockedError:
            print(f"tbflow guard: {job_dir} has a new owner; its containers are left to it", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - the next run of the job removes them by label
            print(f"tbflow guard: could not remove containers of {job_dir}: {exc}", file=sys.stderr)


def prefect_app_server():
    """Prefect's server app as uvicorn runs it for ``prefect server start`` (the API only)."""
    import uvicorn

    config = uvicorn.Config("prefect.server.api.server:create_app", factory=True, log_level="error",
                            lifespan="on")
    return uvicorn.Server(config)


def main(argv: list[str]) -> int:
    parent = int(argv[1])
    listen_fd = int(argv[2]) if len(argv) > 2 else None
    _die_with_parent(parent)
    guard = Guard(parent)
    reader = threading.Thread(target=guard.read_pipe, name="tbflow-pipe", daemon=True)
    reader.start()
    if listen_fd is None:
        signal.signal(signal.SIGTERM, lambda *_: guard.gone.set())
        guard.gone.wait()
        if guard.tbflow_died():
            guard.reap()
        return 0

    sock = socket.socket(fileno=listen_fd)
    server = prefect_app_server()

    def stop_when_tbflow_gone() -> None:
        guard.gone.wait()
        if guard.tbflow_died():
            guard.reap()
        server.should_exit = True
        threading.Timer(HARD_EXIT_AFTER_SEC, os._exit, (1,)).start()

    threading.Thread(target=stop_when_tbflow_gone, name="tbflow-stop", daemon=True).start()
    # uvicorn re-raises the signal that stopped it once it has shut down; with this handler in
    # place that no longer kills the process before the containers are removed below.
    signal.signal(signal.SIGTERM, lambda *_: guard.gone.set())
    server.run(sockets=[sock])
    if guard.tbflow_died():  # stopped by PR_SET_PDEATHSIG's SIGTERM before the pipe said so
        guard.reap()
    os._exit(0)  # the hard-exit timer thread must not keep a finished server alive


if __name__ == "__main__":
    sys.exit(main(sys.argv))
