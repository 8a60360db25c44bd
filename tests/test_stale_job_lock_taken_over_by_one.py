"""The job lock: a live holder (this host, or another host with a fresh heartbeat) is refused with
who holds it; a stale one (dead pid, reused pid, expired heartbeat) is taken over, by exactly one
of many simultaneous takers."""

import multiprocessing as mp
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from tasks_lib.store import job_lock
from tasks_lib.store.job_lock import LOCK_NAME, JobLock, JobLockedError, LockHolder, process_start, read_lock

ROOT = Path(__file__).resolve().parents[1]


def _write_holder(job_dir: Path, **kw) -> LockHolder:
    fields = dict(host=job_lock.HOST, boot_id=job_lock.BOOT_ID, pid_ns=job_lock.PID_NS, pid=1, pid_start="0",
                  since=datetime.now(timezone.utc), token="stale-token")
    fields.update(kw)
    holder = LockHolder(**fields)
    job_dir.mkdir(parents=True, exist_ok=True)
    (job_dir / LOCK_NAME).write_text(holder.model_dump_json())
    return holder


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def _assert_ours(job_dir: Path, lock: JobLock) -> None:
    found = read_lock(job_dir / LOCK_NAME)
    assert found is not None and found[0].token == lock.holder.token and found[0].pid == os.getpid()


def test_dead_pid_on_this_host_is_taken_over(tmp_path):
    _write_holder(tmp_path / "j", pid=_dead_pid())
    with JobLock.acquire(tmp_path / "j") as lock:
        _assert_ours(tmp_path / "j", lock)
    assert not (tmp_path / "j" / LOCK_NAME).exists(), "release removes the lock file"


def test_reused_pid_is_taken_over(tmp_path):
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        # the pid is alive, but it is not the process that took the lock (other start time)
        _write_holder(tmp_path / "j", pid=sleeper.pid, pid_start=str(int(process_start(sleeper.pid)) - 100))
        with JobLock.acquire(tmp_path / "j") as lock:
            _assert_ours(tmp_path / "j", lock)
    finally:
        sleeper.kill()
        sleeper.wait()


def test_live_holder_on_this_host_is_refused_with_who(tmp_path):
    code = ("import sys, time; from tasks_lib.store.job_lock import JobLock; "
            f"JobLock.acquire({str(tmp_path / 'j')!r}); print('held', flush=True); time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(JobLockedError) as err:
            JobLock.acquire(tmp_path / "j")
        msg = str(err.value)
        assert f"pid {holder.pid}" in msg and f"host {job_lock.HOST}" in msg and "since" in msg, msg
    finally:
        holder.kill()
        holder.wait()
    with JobLock.acquire(tmp_path / "j") as lock:  # killed: its lock is stale now
        _assert_ours(tmp_path / "j", lock)


def test_other_host_is_live_until_its_heartbeat_expires(tmp_path):
    _write_holder(tmp_path / "j", host="worker-7.example", boot_id="other", pid=4242)
    with pytest.raises(JobLockedError, match="pid 4242 on host worker-7.example"):
        JobLock.acquire(tmp_path / "j")
    old = time.time() - job_lock.STALE_AFTER_SEC - 5
    os.utime(tmp_path / "j" / LOCK_NAME, (old, old))
    with JobLock.acquire(tmp_path / "j") as lock:
        _assert_ours(tmp_path / "j", lock)


def test_holder_heartbeat_touches_the_lock(tmp_path, monkeypatch):
    monkeypatch.setattr(job_lock, "HEARTBEAT_SEC", 0.1)
    with JobLock.acquire(tmp_path / "j"):
        old = time.time() - 100
        os.utime(tmp_path / "j" / LOCK_NAME, (old, old))
        deadline = time.monotonic() + 10  # a few beats; polled, so a busy machine cannot fail it
        while time.time() - os.stat(tmp_path / "j" / LOCK_NAME).st_mtime > 5 and time.monotonic() < deadline:
            time.sleep(0.1)
        assert time.time() - os.stat(tmp_path / "j" / LOCK_NAME).st_mtime < 5


def test_lock_is_reentrant_within_a_process(tmp_path):
    outer = JobLock.acquire(tmp_path / "j")
    inner = JobLock.acquire(tmp_path / "j")
    assert inner is outer and not inner.fresh
    inner.release()
    assert (tmp_path / "j" / LOCK_NAME).exists(), "the outer holder still holds it"
    outer.release()
    assert not (tmp_path / "j" / LOCK_NAME).exists()


def _race(job_dir: str, barrier, results, everyone_tried) -> None:
    barrier.wait()
    try:
        lock = JobLock.acquire(Path(job_dir))
    except JobLockedError:
        results.put("refused")
        return
    results.put("won")
    everyone_tried.wait(120)  # hold it until every taker has tried, however late one was scheduled
    lock.release()


@pytest.mark.parametrize("round_", range(3))
def test_many_takers_of_a_stale_lock_one_wins(tmp_path, round_):
    _write_holder(tmp_path / "j", pid=_dead_pid())
    ctx = mp.get_context("fork")
    n = 8
    barrier, results, everyone_tried = ctx.Barrier(n), ctx.Queue(), ctx.Event()
    procs = [ctx.Process(target=_race, args=(str(tmp_path / "j"), barrier, results, everyone_tried))
             for _ in range(n)]
    for p in procs:
        p.start()
    try:
        outcomes = [results.get(timeout=60) for _ in procs]
    finally:
        everyone_tried.set()
    for p in procs:
        p.join(60)
    assert sorted(outcomes) == ["refused"] * (n - 1) + ["won"], outcomes
    leftovers = [p.name for p in (tmp_path / "j").iterdir() if p.name != LOCK_NAME]
    assert leftovers == [], f"takeover markers or temp files left: {leftovers}"
