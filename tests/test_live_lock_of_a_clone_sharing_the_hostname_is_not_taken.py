"""Two machines sharing a hostname (cloned VMs, pods) with one jobs dir on NFS, or one S3 store,
took over each other's live locks at once: a holder of the same hostname with another boot id
was read as "this host rebooted". A holder's identity is (host, boot id, pid namespace) now, and
its lock is taken over only when it is provably dead: its process of this very space is gone, or
its heartbeat stopped. A run that finds its lock taken hears of it (``on_lost``); the store lock
never writes unconditionally and keeps the ETag of its own write."""

import os
import subprocess
import threading
import time
import uuid
from datetime import datetime, timezone
from pathlib import Path

import pytest

from s3_store import s3  # noqa: F401 - a fixture
from tasks_lib.store import job_lock
from tasks_lib.store.job_lock import LOCK_NAME, JobLock, JobLockedError, LockHolder, read_lock
from tasks_lib.store.remote_lock import RemoteJobLock, StoreWithoutConditionalWrites
from tasks_lib.store.remote_store import JobMirror


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _clone(**kw) -> LockHolder:
    """The lock of a run on a clone of this machine: same hostname, its own boot, a pid that means
    nothing here (dead, as far as this machine can see)."""
    fields = dict(host=job_lock.HOST, boot_id="boot-of-the-clone", pid_ns=job_lock.PID_NS, pid=_dead_pid(),
                  pid_start="1", since=datetime.now(timezone.utc), token=uuid.uuid4().hex, command="tbflow run (clone)")
    fields.update(kw)
    return LockHolder(**fields)


def _put_lock(job_dir, holder: LockHolder) -> None:
    job_dir.mkdir(parents=True, exist_ok=True)
    tmp = job_dir / "lock.tmp"
    tmp.write_text(holder.model_dump_json())
    os.replace(tmp, job_dir / LOCK_NAME)  # a taker's lock appears whole


def test_clone_with_same_hostname_and_fresh_heartbeat_is_refused_not_taken(tmp_path):
    clone = _clone()
    _put_lock(tmp_path / "j", clone)
    with pytest.raises(JobLockedError, match=f"on host {job_lock.HOST}"):
        JobLock.acquire(tmp_path / "j")
    assert read_lock(tmp_path / "j" / LOCK_NAME)[0].token == clone.token, "the clone's live lock was replaced"
    old = time.time() - job_lock.STALE_AFTER_SEC - 5  # the clone stopped beating: now it is provably dead
    os.utime(tmp_path / "j" / LOCK_NAME, (old, old))
    with JobLock.acquire(tmp_path / "j") as lock:
        assert read_lock(tmp_path / "j" / LOCK_NAME)[0].token == lock.holder.token


def test_container_on_this_host_with_another_pid_namespace_is_refused(tmp_path):
    _put_lock(tmp_path / "j", _clone(boot_id=job_lock.BOOT_ID, pid_ns="pid:[4026599999]"))
    with pytest.raises(JobLockedError):
        JobLock.acquire(tmp_path / "j")
    _put_lock(tmp_path / "j", _clone(boot_id=job_lock.BOOT_ID, pid_ns=None))  # written before pid_ns existed
    with pytest.raises(JobLockedError):
        JobLock.acquire(tmp_path / "j")


def test_holder_whose_lock_a_clone_took_is_told_once(tmp_path, monkeypatch):
    monkeypatch.setattr(job_lock, "HEARTBEAT_SEC", 0.05)
    told: list[str] = []
    heard = threading.Event()
    lock = JobLock.acquire(tmp_path / "j", on_lost=lambda what: (told.append(what), heard.set()))
    try:
        _put_lock(tmp_path / "j", _clone(pid=4242))
        assert heard.wait(30), "the holder never noticed its lock was taken"
        assert len(told) == 1 and "pid 4242" in told[0] and "taken over" in told[0], told
    finally:
        lock.release()
    assert read_lock(tmp_path / "j" / LOCK_NAME)[0].pid == 4242, "release left the taker's lock in place"


def _mirror(s3, name: str) -> JobMirror:  # noqa: F811
    from s3fs import S3FileSystem

    S3FileSystem.clear_instance_cache()  # an instance cached by an earlier test talks to its (stopped) server
    return JobMirror(f"s3://{s3.bucket}/jobs/{name}", Path("/nonexistent") / name)  # the lock never touches it


def test_store_lock_of_a_clone_is_refused_and_a_lost_one_is_told(s3, monkeypatch):  # noqa: F811
    key = f"{s3.bucket}/jobs/j/{LOCK_NAME}"
    clone = _clone()
    s3.fs().pipe_file(key, clone.model_dump_json().encode())
    with pytest.raises(JobLockedError, match=f"on host {job_lock.HOST}"):
        RemoteJobLock.acquire(_mirror(s3, "j"))
    assert LockHolder.model_validate_json(s3.fs().cat_file(key)).token == clone.token
    s3.fs().rm_file(key)

    monkeypatch.setattr(job_lock, "HEARTBEAT_SEC", 0.05)
    heard = threading.Event()
    told: list[str] = []
    lock = RemoteJobLock.acquire(_mirror(s3, "j"), on_lost=lambda what: (told.append(what), heard.set()))
    try:
        s3.fs().pipe_file(key, _clone(pid=4343).model_dump_json().encode())  # the clone took it (it thought)
        assert heard.wait(60), "the store lock's holder never noticed"
        assert "pid 4343" in told[0], told
    finally:
        lock.release()
    assert LockHolder.model_validate_json(s3.fs().cat_file(key)).pid == 4343


def test_store_lock_keeps_the_etag_its_own_write_returned(s3, monkeypatch):  # noqa: F811
    mirror = _mirror(s3, "e")
    returned: list[str] = []
    real_pipe, real_info = mirror.fs.pipe_file, mirror.fs.info

    def pipe_file(path, data, **kw):
        out = real_pipe(path, data, **kw)
        returned.append(out["ETag"])
        return out

    def info(path, **kw):  # as if a taker wrote between our put and a read after it
        return {**real_info(path, **kw), "ETag": '"a-takers-etag"'}

    monkeypatch.setattr(mirror.fs, "pipe_file", pipe_file)
    monkeypatch.setattr(mirror.fs, "info", info)
    lock = RemoteJobLock.acquire(mirror)
    try:
        assert returned and lock.etag == returned[-1] != '"a-takers-etag"'
    finally:
        monkeypatch.setattr(mirror.fs, "info", real_info)
        lock.release()


def test_store_without_conditional_writes_is_refused_naming_it(tmp_path):
    mirror = JobMirror(f"file://{tmp_path}/jobs/j", tmp_path / "copy" / "j")
    with pytest.raises(StoreWithoutConditionalWrites) as err:
        RemoteJobLock.acquire(mirror)
    assert err.value.where == f"file://{tmp_path}/jobs/j" and "conditional writes" in err.value.message
    assert not (tmp_path / "jobs" / "j" / LOCK_NAME).exists(), "nothing was written"
