"""A run killed outright with its guard (SIGKILL of tbflow and of the server process next to it,
as when the machine loses power: no hook, no finally, no guard) leaves its trial container and a
stale lock; the next tbflow command that touches the job (here ``report``) removes that container, and
``tbflow gc`` removes such orphans of every job, but never a container of a job whose lock a live
process holds, nor one of a job outside its scope."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from docker.errors import NotFound

from task_factory import make_task
from tbflow_process import alive, server_processes, wait_until

from tasks_lib.container.docker_client import LABEL_JOB, LABEL_JOB_DIR, LABEL_TRIAL
from tasks_lib.store.job_lock import LOCK_NAME

pytestmark = pytest.mark.usefixtures("per_command_server")

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "flows.cli.main"]
BASE = "tbflow/base:bookworm"


def _trial_container(client, job_dir: Path, name: str):
    return client.containers.run(BASE, ["sleep", "infinity"], detach=True, network_mode="none", init=True,
                                 labels={"tbflow": "1", LABEL_TRIAL: name, LABEL_JOB: f"id-{name}",
                                         LABEL_JOB_DIR: str(job_dir)})


def _exists(client, cid: str) -> bool:
    """One list call filtered by id: ``containers.list`` inspects every container on the engine, and
    one stuck container of another user's made this hang for the client's 300 s read timeout."""
    return any(c["Id"] == cid for c in client.api.containers(all=True, filters={"id": cid}))


def _crash_a_run(client, ds: Path, jobs: Path, name: str) -> str:
    """Start a run, SIGKILL its guard and its whole process group once the trial container runs; its id.

    The guard (flows/local_server/guard.py, in the local server's own session) removes the containers of a tbflow
    that died, which is its job; it goes first here, or the orphan this test needs would not exist."""
    proc = subprocess.Popen([*CLI, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", name], cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    job_dir = os.path.realpath(jobs / name)
    deadline = time.monotonic() + 400  # a fresh PREFECT_HOME migrates first; slow on a loaded machine
    while not (found := client.containers.list(filters={"label": f"{LABEL_JOB_DIR}={job_dir}"})):
        assert proc.poll() is None and time.monotonic() < deadline, "the run never started its trial"
        time.sleep(0.2)
    guards = server_processes(proc.pid)
    assert guards, "tbflow started no server/guard process"
    for pid in guards:  # SIGKILL: it cannot act on it; tbflow next, before it can notice its server is gone
        os.kill(pid, signal.SIGKILL)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    wait_until(lambda: not any(alive(p) for p in guards), 30, "the guard to die")
    return found[0].id


@pytest.mark.docker
def test_report_removes_orphans_of_a_killed_run(docker_ready, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "slow", solve="sleep 60\n")
    jobs = tmp_path / "jobs"
    cid = _crash_a_run(docker_ready, ds, jobs, "a")
    assert _exists(docker_ready, cid), "SIGKILL must leave the container (nothing ran to remove it)"
    assert (jobs / "a" / LOCK_NAME).exists(), "and a stale lock"
    res = subprocess.run([*CLI, "report", str(jobs / "a")], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert not _exists(docker_ready, cid), "report must remove the killed run's container"


@pytest.mark.docker
def test_gc_removes_orphans_never_live_or_foreign(docker_ready, tmp_path):
    jobs = tmp_path / "jobs"
    dead, live = jobs / "dead", jobs / "live"
    for d in (dead, live):
        d.mkdir(parents=True)
    dead_pid = subprocess.Popen(["true"])
    dead_pid.wait()
    (dead / LOCK_NAME).write_text(  # a dead run of this very host, boot and pid namespace
        '{"host": "%s", "boot_id": "%s", "pid_ns": "%s", "pid": %d, "pid_start": "1", "since": "2026-01-01T00:00:00Z", '
        '"token": "t"}' % (__import__("socket").gethostname(),
                           Path("/proc/sys/kernel/random/boot_id").read_text().strip(), os.readlink("/proc/self/ns/pid"),
                           dead_pid.pid))
    holder = subprocess.Popen([sys.executable, "-c", "import time; from tasks_lib.store.job_lock import JobLock; "
                               f"JobLock.acquire({str(live)!r}); print('held', flush=True); time.sleep(120)"],
                              cwd=ROOT, stdout=subprocess.PIPE, text=True)
    made = []
    try:
        assert holder.stdout.readline().strip() == "held"
        orphan = _trial_container(docker_ready, os.path.realpath(dead), "t.oracle.1")
        running = _trial_container(docker_ready, os.path.realpath(live), "t.oracle.1")
        other = tmp_path.parent / f"not-under-scope-{os.getpid()}" / "jobs" / "x"
        foreign = _trial_container(docker_ready, other, "t.oracle.1")
        made = [orphan, running, foreign]
        res = subprocess.run([*CLI, "gc", "--jobs-dir", str(tmp_path)], cwd=ROOT, capture_output=True, text=True,
                             timeout=120)
        assert res.returncode == 0, res.stderr
        assert not _exists(docker_ready, orphan.id), res.stdout
        assert _exists(docker_ready, running.id), "gc removed a container of a job a live process holds"
        assert _exists(docker_ready, foreign.id), "gc went outside --jobs-dir"
        assert f"pid {holder.pid}" in res.stdout and "removed 1 orphan container(s)" in res.stdout, res.stdout
    finally:
        holder.kill()
        holder.wait()
        for c in made:
            try:
                c.remove(force=True)
            except NotFound:
                pass  # removed by gc
