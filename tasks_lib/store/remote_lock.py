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

Within a process the lock is re-entrant (the CLI takes it before the job flow takes it again).
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime, timezone

from tasks_lib.store.job_lock import HEARTBEAT_SEC, LOCK_NAME, JobLockedError, LockHolder, describe_holder, holder_alive, me
from tasks_lib.store.remote_store import JobMirror

_log = logging.getLogger(__name__)
_held: dict[str, "RemoteJobLock"] = {}
_held_guard = threading.Lock()


class RemoteJobLock:
    def __init__(self, mirror: JobMirror) -> None:
        self.mirror = mirror
        self.fs = mirror.fs
        self.path = f"{mirror.root}/{LOCK_NAME}"
        self.holder: LockHolder | None = None
        self.etag: str | None = None
        self._count = 0
        self._stop = threading.Event()

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
        data = holder.model_dump_json().encode()
        try:
            self.fs.pipe_file(self.path, data, **cond)
        except TypeError:  # a store without If-Match (not S3): best effort, docs/deployments.md
            self.fs.pipe_file(self.path, data, **{k: v for k, v in cond.items() if k == "mode"})
        self.fs.invalidate_cache(self.path)
        self.etag = str(self.fs.info(self.path).get("ETag"))

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
    def acquire(cls, mirror: JobMirror) -> "RemoteJobLock":
        """Take the lock of the job in ``mirror`` or raise ``JobLockedError``."""
        with _held_guard:
            lock = _held.get(mirror.url)
            if lock is None:
                lock = cls(mirror)
                holder = me()
                lock._take(holder)
                lock.holder = holder
                threading.Thread(target=lock._beat, name="remote-lock-heartbeat", daemon=True).start()
                _held[mirror.url] = lock
            lock._count += 1
            return lock

    @property
    def fresh(self) -> bool:
        return self._count == 1

    def release(self) -> None:
        with _held_guard:
            self._count -= 1
            if self._count > 0:
                return
            _held.pop(self.mirror.url, None)
        self._stop.set()
        try:
            found = self._read()
            if found is not None and self.holder is not None and found[0].token == self.holder.token:
                self.fs.rm_file(self.path)
        except Exception as exc:  # noqa: BLE001 - a lock left behind goes stale and is taken over
            _log.warning("could not release the lock of %s: %s", self.mirror.url, exc)

    def _beat(self) -> None:
        while not self._stop.wait(HEARTBEAT_SEC):
            if self.holder is None or self.etag is None:
                return
            try:
                self._write(self.holder, IfMatch=self.etag)
            except (FileExistsError, OSError) as exc:
                found = self._read()
                if found is None or found[0].token != self.holder.token:
                    _log.error("the lock of %s is no longer ours; another run may have taken it", self.mirror.url)
                    return
                _log.warning("lock heartbeat of %s failed: %s", self.mirror.url, exc)
            except Exception as exc:  # noqa: BLE001 - the store may be away for a moment
                _log.warning("lock heartbeat of %s failed: %s", self.mirror.url, exc)


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
