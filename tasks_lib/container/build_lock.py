"""One build of an image tag at a time on this host, across tbflow processes.

Two tbflow commands started together on the same dataset (two harnesses compared side by side,
or a job and its shard on one machine) would otherwise both find the image missing and both build
it: twice the CPU on a machine whose trials need it, for the same result. The lock is an
``flock`` on a file in the cache dir (``tasks_lib/cache_dir.py``), named by
the Docker engine and the tag; the kernel drops it when its holder dies, so a killed build never
leaves it held. Waiting polls, so Ctrl-C still stops a trial waiting for another process's build.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from tasks_lib.cache_dir import cache_dir

POLL_SEC = 0.2


def lock_dir() -> Path:
    return cache_dir() / "build-locks"


@contextmanager
def build_lock(tag: str, check_interrupt: Callable[[], None]) -> Iterator[None]:
    """Hold the host-wide lock of ``tag`` (waiting for another process's build to finish)."""
    key = hashlib.sha256(f"{os.environ.get('DOCKER_HOST', '')}\0{tag}".encode()).hexdigest()[:32]
    path = lock_dir() / f"{key}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                check_interrupt()
                time.sleep(POLL_SEC)
        yield
    finally:
        os.close(fd)  # releases the lock
