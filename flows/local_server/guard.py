"""The guard: what makes sure nothing of a tbflow command's run outlives the command.

The command holds the stdin pipe of its local server process (flows/local_server/server_main.py)
for its whole life and writes ``dir <job dir>`` on it when a job starts, ``bye`` when it stopped
cleanly. When the pipe ends without ``bye`` (the command was killed, even with ``kill -9``:
the kernel closes it), the guard removes the containers labelled with those job dirs, which would
otherwise run on with nobody watching them (docs/running-jobs.md, "Stopping").
"""

from __future__ import annotations

import sys
import threading
from pathlib import Path

#: what the job's lock file names as its holder while the guard removes a killed run's containers
GUARD_COMMAND = "tbflow guard: removing the containers of a killed run"


class Guard:
    """Reads one command's connection; knows whether it stopped cleanly and which job dirs it ran."""

    def __init__(self, stream) -> None:  # noqa: ANN001 - a text stream of lines
        self.stream = stream
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
        return not self.clean.is_set() and self.gone.is_set()

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
        from tasks_lib.container.container_removal import remove_job_containers
        from tasks_lib.store.job_lock import JobLock, JobLockedError

        try:
            with JobLock.acquire(Path(job_dir), command=GUARD_COMMAND):
                remove_job_containers(job_dir, label=LABEL_JOB_DIR)
        except JobLockedError:
            print(f"tbflow guard: {job_dir} has a new owner; its containers are left to it", file=sys.stderr)
        except Exception as exc:  # noqa: BLE001 - the next run of the job removes them by label
            print(f"tbflow guard: could not remove containers of {job_dir}: {exc}", file=sys.stderr)
