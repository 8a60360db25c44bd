"""The guard of a killed tbflow removes its job's containers only under the job's lock
(flows/local_server/guard.py, ``Guard.reap``): a ``resume`` that took the job over right
after a ``kill -9`` holds that lock, and its fresh containers must survive the guard that is still
cleaning up after the dead run. Once nobody holds the lock (the killed run's is stale), the guard
takes it and removes them."""

from __future__ import annotations

import io
import subprocess
import sys
import textwrap

import pytest

from flows.local_server.guard import Guard
from tasks_lib.container.docker_client import LABEL_JOB_DIR, LABEL_ROOT, get_client
from tasks_lib.store.job_lock import LOCK_NAME, read_lock

pytestmark = pytest.mark.docker

HOLD = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from tasks_lib.store.job_lock import JobLock
    JobLock.acquire(Path(sys.argv[1]))
    print("held", flush=True)
    time.sleep(600)
""")


def _container(job_dir: str) -> str:
    api = get_client().api
    cid = api.create_container("tbflow/base:bookworm", ["sleep", "infinity"],
                               labels={LABEL_ROOT: "1", LABEL_JOB_DIR: job_dir},
                               host_config=api.create_host_config(network_mode="none", init=True))["Id"]
    api.start(cid)
    return cid


def _exists(cid: str) -> bool:
    return any(c["Id"] == cid for c in get_client().api.containers(all=True, filters={"id": cid}))


def _guard_of_a_killed_run(job_dir: str) -> Guard:
    guard = Guard(io.StringIO(f"dir {job_dir}\n"))  # the pipe ends without "bye": tbflow was killed
    guard.read_pipe()
    assert guard.tbflow_died()
    return guard


def test_guard_leaves_the_containers_of_a_job_a_new_run_took_over(docker_ready, tmp_path):
    job_dir = str((tmp_path / "job").resolve())
    (tmp_path / "job").mkdir()
    new_run = subprocess.Popen([sys.executable, "-c", HOLD, job_dir], stdout=subprocess.PIPE, text=True)
    try:
        assert new_run.stdout is not None and new_run.stdout.readline().strip() == "held"
        cid = _container(job_dir)
        _guard_of_a_killed_run(job_dir).reap()
        assert _exists(cid), "the guard removed a container of the run that now owns the job"
        holder = read_lock(tmp_path / "job" / LOCK_NAME)
        assert holder is not None and holder[0].pid == new_run.pid, "the guard touched the new owner's lock"
    finally:
        new_run.kill()
        new_run.wait()
    # the new run was killed in turn: its lock is stale, so this guard takes it and removes the container
    _guard_of_a_killed_run(job_dir).reap()
    assert not _exists(cid)
    assert read_lock(tmp_path / "job" / LOCK_NAME) is None, "the guard must give the lock back"
