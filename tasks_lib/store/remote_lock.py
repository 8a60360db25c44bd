"""One owner per job when the job lives behind a URL (``tasks_lib/store/remote_store.py``).

Object stores have no link(2), so the lock is an object ``<job>/.tbflow.lock`` created with a
conditional write (S3 ``If-None-Match: *``: fsspec's ``mode="create"``): of two runs that create
it at once, exactly one succeeds; the other reads the holder and is refused in one line
(``JobLockedError``, as for a local job). The holder rewrites the object every
``HEARTBEAT_SEC`` (its ``LastModified`` is the heartbeat) with ``If-Match`` on the ETag it last
wrote, so a heartbeat never overwrites a taker's lock. A holder is stale when it is a dead process
of this host, or another host's whose heartbeat is older than ``STALE_AFTER_SEC`` (clocks are
assumed to be roughly in step with the store's). A stale lock is replaced with ``If-Match`` on its
ETag: of several takers exactly one wins, the others see the winner's lock and are refused.

Every write is conditional: a store whose fsspec filesystem cannot make S3's conditional writes
(If-None-Match/If-Match: ``s3fs``) is refused, naming the store, instead of falling back to a plain
write that would overwrite a taker's lock. The ETag the holder keeps is the one its own write's
response returned, never one read afterwards (by then it may be a taker's).

Within a process the lock is re-entrant, and a holder that finds another holder's lock in its
place calls ``on_lost`` (``held_locks``).
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone

from tasks_lib.errors import InputError
from tasks_lib.store import job_lock
from tasks_lib.store.held_locks import OnLost, Reentrant
from tasks_lib.store.job_lock import LOCK_NAME, JobLockedError, LockHolder, describe_holder, holder_alive, me
from tasks_lib.store.remote_store import JobMirror

_log = logging.getLogger(__name__)
#: fsspec protocols whose ``pipe_file`` makes S3's conditional writes and returns the put's ETag
CONDITIONAL_PROTOCOLS = frozenset({"s3", "s3a"})


class StoreWithoutConditionalWrites(InputError):
    """The store cannot write the lock only-if-absent / only-if-unchanged: one owner per job could
    not be kept, so the job is not run there."""


def require_conditional_writes(mirror: JobMirror) -> None:
    protocols = mirror.fs.protocol if isinstance(mirror.fs.protocol, (tuple, list)) else (mirror.fs.protocol,)
    if not CONDITIONAL_PROTOCOLS.intersection(protocols):
        raise StoreWithoutConditionalWrites(mirror.url, (
            f"the store ({'/'.join(protocols)}://) cannot make conditional writes (If-None-Match/If-Match), "
            "which the job lock needs to keep one run per job; keep jobs on S3 (or an S3-compatible store) "
            "or on a local or shared path"))


class RemoteJobLock(Reentrant):
    def __init__(self, mirror: JobMirror) -> None:
        super().__init__()
        self.mirror = mirror
        self.fs = mirror.fs
        self.path = f"{mirror.root}/{LOCK_NAME}"
        self.holder: LockHolder | None = None
        self.etag: str | None = None

    def _read(self) -> tuple[LockHolder, float, str] | None:
        """(holder, heartbeat age, ETag) of the lock object, None when there is none."""
        self.fs.invalidate_cache(self.path)
        try:
            info = self.fs.info(self.path)
            data = self.fs.cat_file(self.path)
        except FileNotFoundError:
            return None
        modified = info.get("LastModified")
        if not isinstance(modified, datetime):  # a store without S3's metadata (file://, memory://)
            mtime = info.get("mtime") or info.get("created")
            modified = (datetime.fromtimestamp(float(mtime), timezone.utc) if isinstance(mtime, (int, float))
                        else mtime if isinstance(mtime, datetime) else datetime.now(timezone.utc))
        age = max(0.0, (datetime.now(timezone.utc) - modified).total_seconds())
        try:
            holder = LockHolder.model_validate_json(data)
        except ValueError:
            holder = LockHolder(host="(unreadable lock object)", boot_id="", pid=0, pid_start=None,
                                since=modified, token=f"etag-{info.get('ETag')}")
        return holder, age, str(info.get("ETag"))

    def _write(self, holder: LockHolder, **cond: str) -> None:
        """Write ``holder`` only if absent (``mode="create"``) or unchanged (``IfMatch``), and keep
        the ETag of this very write (from its response)."""
        assert cond.get("mode") == "create" or "IfMatch" in cond, "the lock is never written unconditionally"
        out = self.fs.pipe_file(self.path, holder.model_dump_json().encode(), **cond)
        self.fs.invalidate_cache(self.path)
        etag = out.get("ETag") if isinstance(out, dict) else None
        if not etag:
            raise StoreWithoutConditionalWrites(self.mirror.url, "the store's write returned no ETag; the job "
                                                                 "lock cannot tell its own write from a taker's")
        self.etag = str(etag)

    def _take(self, holder: LockHolder) -> None:
        for _ in range(20):
            try:
                self._write(holder, mode="create")
                return
            except FileExistsError:
                pass
            found = self._read()
            if found is None:
                continue  # released meanwhile
            current, age, etag = found
            if holder_alive(current, age):
                raise JobLockedError(self.mirror.url, current, age)
            try:
                self._write(holder, IfMatch=etag)  # only one taker replaces this exact stale lock
            except (FileExistsError, OSError):
                continue  # another taker won: the next look shows its (live) lock
            _log.warning("took over the stale lock of %s: %s", self.mirror.url, describe_holder(current, age))
            return
        found = self._read()
        raise JobLockedError(self.mirror.url, *(found[:2] if found else (holder, 0.0)))

    @classmethod
    def acquire(cls, mirror: JobMirror, on_lost: OnLost | None = None) -> "RemoteJobLock":
        """Take the lock of the job in ``mirror`` or raise ``JobLockedError`` (or
        ``StoreWithoutConditionalWrites``); ``on_lost`` as in ``held_locks``."""

        def take() -> RemoteJobLock:
            require_conditional_writes(mirror)
            lock = cls(mirror)
            holder = me()
            lock._take(holder)
            lock.holder = holder
            lock._start_heartbeat(mirror.url, lambda: job_lock.HEARTBEAT_SEC, lock._beat)
            return lock

        return cls._shared(mirror.url, take, on_lost)

    def release(self) -> None:
        if not self._last_release():
            return
        try:
            found = self._read()
            if found is not None and self.holder is not None and found[0].token == self.holder.token:
                self.fs.rm_file(self.path)
        except Exception as exc:  # noqa: BLE001 - a lock left behind goes stale and is taken over
            _log.warning("could not release the lock of %s: %s", self.mirror.url, exc)

    def _beat(self) -> str | None:
        """Rewrite the lock on the ETag of our last write; None while it is ours, else who holds it."""
        if self.holder is None or self.etag is None:
            return None
        try:
            self._write(self.holder, IfMatch=self.etag)
            return None
        except (FileExistsError, OSError) as exc:
            try:
                found = self._read()
            except Exception as read_exc:  # noqa: BLE001 - the store may be away for a moment
                _log.warning("lock heartbeat of %s failed: %s; %s", self.mirror.url, exc, read_exc)
                return None
            if found is None:
                return "the lock object is gone"
            if found[0].token != self.holder.token:
                return describe_holder(found[0], found[1])
            _log.warning("lock heartbeat of %s failed: %s", self.mirror.url, exc)
        except Exception as exc:  # noqa: BLE001 - the store may be away for a moment
            _log.warning("lock heartbeat of %s failed: %s", self.mirror.url, exc)
        return None


class JobLocks:
    """The locks a run holds on one job: the working copy's (so ``tbflow gc`` and orphan removal
    on this host see a live job) and, for a job in a store, the store's."""

    def __init__(self, local, remote: RemoteJobLock | None) -> None:  # noqa: ANN001 - a JobLock
        self.local = local
        self.remote = remote

    @property
    def fresh(self) -> bool:
        return bool(self.local.fresh)

    def release(self) -> None:
        try:
            if self.remote is not None:
                self.remote.release()
        finally:
            self.local.release()
