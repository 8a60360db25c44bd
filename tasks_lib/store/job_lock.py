"""One owner per job: an exclusive lock file in the job directory, held for the whole run.

Two runs of one job would share its trial containers (name conflicts), its cached stages and its
records. ``JobLock`` makes the second one fail at once with the holder's host, pid and start time.

Why a lock *file* and not ``flock``: a job dir may live on a shared filesystem (NFS) read by
workers on several hosts, where ``flock`` is emulated or missing, and a lock a reader cannot
explain ("who holds it?") is no help. Why not ``filelock``/``flufl.lock``: their soft/NFS locks
expire by age only, so a job whose runner crashed on this host would stay locked until the lease
ran out; here a holder on this host is checked directly (pid alive, same process start time).

``JOB_DIR/.tbflow.lock`` holds a ``LockHolder`` (JSON). It appears whole or not at all: it is
written to a unique temp file and ``link(2)``-ed to its name, which is atomic and exclusive on
local filesystems and on NFS (where ``link`` may report failure after succeeding, so the temp
file's link count decides). The holder touches the file every ``HEARTBEAT_SEC``.

A holder's identity is (hostname, boot id, pid namespace): machines cloned from one image, or
pods, share a hostname, and containers on one host share its boot id. A holder is *stale* only
when that is provable: of this very host and namespace (all three equal) with its pid gone or
belonging to a process started at another time (pid reused); otherwise (another host, the same
hostname with another boot id, which may be a reboot or may be a clone that is running right now)
only when its heartbeat is older than ``STALE_AFTER_SEC``. A holder that finds its lock taken
(``held_locks``) calls its ``on_lost``: a job run stops as on Ctrl-C. A stale lock is taken over by exactly one taker: to
remove it, a taker must first create ``.tbflow.lock.break-<holder token>`` the same exclusive way
(a marker that is itself a lock, so a taker that dies mid-takeover is stale in turn), and removes
the lock only if it still names that holder. Everyone else sees either the marker's live holder
or the new lock, and is refused.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import sys
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel, ValidationError

from tasks_lib.errors import InputError
from tasks_lib.store.held_locks import OnLost, Reentrant

LOCK_NAME = ".tbflow.lock"
HEARTBEAT_SEC = 10.0
STALE_AFTER_SEC = 60.0
_log = logging.getLogger(__name__)


class LockHolder(BaseModel):
    host: str
    boot_id: str
    pid: int
    #: the process's start time in clock ticks since boot (``/proc/<pid>/stat`` field 22)
    pid_start: str | None
    #: the pid namespace (``/proc/self/ns/pid``): a pid means this process only in it; None when
    #: unknown (a lock written before tbflow recorded it), judged by its heartbeat then
    pid_ns: str | None = None
    since: datetime
    token: str
    command: str = ""


class JobLockedError(InputError):
    """The job is run by another live process. The CLI exits 2 with this one line."""

    def __init__(self, job_dir: Path | str, holder: LockHolder, heartbeat_age: float) -> None:
        self.holder = holder
        super().__init__(str(job_dir), describe_holder(holder, heartbeat_age)
                         + "; wait for it to finish or stop it")


def describe_holder(h: LockHolder, heartbeat_age: float) -> str:
    since = h.since.astimezone().strftime("%Y-%m-%d %H:%M:%S %z")
    return (f"job is in use by another tbflow run: pid {h.pid} on host {h.host} since {since} "
            f"(last heartbeat {heartbeat_age:.0f}s ago)")


def _read_text(path: str) -> str | None:
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.read()
    except OSError:
        return None


def process_start(pid: int) -> str | None:
    """The start time of ``pid`` (clock ticks since boot), None when no such process exists."""
    text = _read_text(f"/proc/{pid}/stat")
    if text is None:
        return None
    fields = text[text.rfind(")") + 2:].split()  # the command name may hold spaces and ')'
    return fields[19] if len(fields) > 19 else None


def _pid_namespace() -> str | None:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return None


HOST = socket.gethostname()
BOOT_ID = (_read_text("/proc/sys/kernel/random/boot_id") or "").strip()
PID_NS = _pid_namespace()


def me(command: str | None = None) -> LockHolder:
    pid = os.getpid()
    return LockHolder(host=HOST, boot_id=BOOT_ID, pid=pid, pid_start=process_start(pid), pid_ns=PID_NS,
                      since=datetime.now(timezone.utc), token=uuid.uuid4().hex,
                      command=command if command is not None else " ".join(sys.argv)[:300])


def same_process_space(h: LockHolder) -> bool:
    """True when ``h``'s pid names a process this process can see: the same host, boot and pid
    namespace, each known. A hostname alone proves nothing (clones and pods share one)."""
    return bool(BOOT_ID) and PID_NS is not None and (h.host, h.boot_id, h.pid_ns) == (HOST, BOOT_ID, PID_NS)


def holder_alive(h: LockHolder, heartbeat_age: float) -> bool:
    """False only when the holder is provably gone: its process of this space exited (or its pid
    was reused), or, for any other holder, its heartbeat stopped ``STALE_AFTER_SEC`` ago."""
    if same_process_space(h):
        start = process_start(h.pid)
        return start is not None and start == h.pid_start
    return heartbeat_age < STALE_AFTER_SEC


def read_lock(path: Path) -> tuple[LockHolder, float] | None:
    """(holder, seconds since its heartbeat), or None when there is no lock file."""
    try:
        mtime = os.stat(path).st_mtime
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    age = max(0.0, time.time() - mtime)
    try:
        return LockHolder.model_validate_json(text), age
    except (ValidationError, json.JSONDecodeError):
        # Not written by tbflow (files appear whole): judge it by its age like a remote holder.
        return LockHolder(host="(unreadable lock file)", boot_id="", pid=0, pid_start=None,
                          since=datetime.fromtimestamp(mtime, timezone.utc), token=f"mtime-{mtime}"), age


def _create(path: Path, holder: LockHolder) -> bool:
    """Create ``path`` holding ``holder`` if it does not exist; True when we created it."""
    tmp = path.with_name(f"{path.name}.{holder.token}.tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(holder.model_dump_json())
        fh.flush()
        os.fsync(fh.fileno())
    try:
        os.link(tmp, path)
        return True
    except FileExistsError:
        return False
    except OSError:
        if os.stat(tmp).st_nlink == 2:  # NFS: the link was made, only its reply was lost
            return True
        raise
    finally:
        tmp.unlink(missing_ok=True)


def _take(path: Path, holder: LockHolder, job_dir: Path, depth: int = 0) -> None:
    """Create ``path`` for ``holder``, taking over a stale one; raise ``JobLockedError`` if live."""
    for _ in range(100):
        if _create(path, holder):
            return
        found = read_lock(path)
        if found is None:
            continue  # released meanwhile: try again
        current, age = found
        if holder_alive(current, age):
            raise JobLockedError(job_dir, current, age)
        if depth >= 3:
            raise JobLockedError(job_dir, current, age)
        marker = path.with_name(f"{path.name}.break-{current.token}")
        try:
            _take(marker, holder, job_dir, depth + 1)
        except JobLockedError:
            time.sleep(0.05)  # another taker is breaking it; the next look shows who won
            continue
        try:
            again = read_lock(path)
            if again is not None and again[0].token == current.token:
                path.unlink(missing_ok=True)  # only the marker's holder may remove this holder
                _log.warning("took over the stale lock of %s: %s", job_dir, describe_holder(current, age))
            if _create(path, holder):
                return
        finally:
            marker.unlink(missing_ok=True)
    raise JobLockedError(job_dir, *(read_lock(path) or (holder, 0.0)))


class JobLock(Reentrant):
    """The exclusive lock of one job dir; re-entrant within a process (``held_locks``)."""

    def __init__(self, job_dir: Path) -> None:
        super().__init__()
        self.job_dir = Path(job_dir)
        self.path = self.job_dir / LOCK_NAME
        self.holder: LockHolder | None = None

    @classmethod
    def acquire(cls, job_dir: Path, command: str | None = None, on_lost: OnLost | None = None) -> "JobLock":
        """Take the lock of ``job_dir`` (created if missing) or raise ``JobLockedError``;
        ``command`` is what the lock file says holds it (default: this process's command line);
        ``on_lost`` is called once if another holder is found in its place."""
        key = os.path.realpath(job_dir)

        def take() -> JobLock:
            lock = cls(Path(key))
            Path(key).mkdir(parents=True, exist_ok=True)
            holder = me(command)
            _take(lock.path, holder, Path(job_dir))
            lock.holder = holder
            lock._start_heartbeat(str(job_dir), lambda: HEARTBEAT_SEC, lock._beat)
            return lock

        return cls._shared(key, take, on_lost)

    def release(self) -> None:
        if not self._last_release():
            return
        found = read_lock(self.path)
        if found is not None and self.holder is not None and found[0].token == self.holder.token:
            self.path.unlink(missing_ok=True)

    def _beat(self) -> str | None:
        """Touch the lock file while it is ours; else say who holds it now."""
        found = read_lock(self.path)
        if self.holder is None:
            return None
        if found is None:
            return "the lock file is gone"
        if found[0].token != self.holder.token:
            return describe_holder(*found)
        try:
            os.utime(self.path)
        except OSError as exc:
            _log.warning("lock heartbeat of %s failed: %s", self.job_dir, exc)
        return None


def lock_state(job_dir: Path) -> tuple[LockHolder, float, bool] | None:
    """(holder, heartbeat age, alive) of ``job_dir``'s lock, or None when it has none."""
    found = read_lock(Path(job_dir) / LOCK_NAME)
    if found is None:
        return None
    holder, age = found
    return holder, age, holder_alive(holder, age)
