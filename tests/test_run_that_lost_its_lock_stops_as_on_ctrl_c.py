"""A run whose job lock another run took (a clone of this machine sharing its hostname judged it
dead, or an operator broke it) only logged it and went on: both runs then removed each other's
containers on name conflicts and wrote the same records. Now it stops as Ctrl-C stops it: its
trial containers are removed, the interrupted trial leaves no record, the taker's lock stays, and
the summary says why."""

import os
import signal
import subprocess
import uuid
from datetime import datetime, timezone

import pytest

from task_factory import make_task
from tasks_lib.store import job_lock
from tasks_lib.store.job_lock import LOCK_NAME, LockHolder, read_lock
from tbflow_process import ROOT, TBFLOW, job_containers, running_job_containers, wait_until

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("per_command_server")]


def test_run_whose_lock_is_taken_stops_removes_its_containers_and_records_nothing(docker_ready, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "slow", solve="sleep 900\n", agent_timeout=900)
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen([*TBFLOW, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", "j"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_until(lambda: proc.poll() is not None or running_job_containers(docker_ready, jobs / "j"), 300,
                   "the slow trial's container")
        assert proc.poll() is None, proc.stdout.read()
        # a run on a clone of this machine (same hostname, its own boot) takes the job over
        taker = LockHolder(host=job_lock.HOST, boot_id="boot-of-the-clone", pid=4242, pid_start="1",
                           since=datetime.now(timezone.utc), token=uuid.uuid4().hex, command="tbflow run (clone)")
        tmp = jobs / "j" / "taker.tmp"
        tmp.write_text(taker.model_dump_json())
        os.replace(tmp, jobs / "j" / LOCK_NAME)
        out, _ = proc.communicate(timeout=180)  # the next heartbeat (10 s) notices
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + signal.SIGINT, out
    assert "stopped because the job's lock was lost" in out and "pid 4242" in out, out
    assert "Traceback" not in out, out
    wait_until(lambda: job_containers(docker_ready, jobs / "j") == [], 60, "the job's containers to be removed")
    assert not (jobs / "j" / "trials" / "slow.oracle.1" / "trial.json").exists(), "recorded after losing the lock"
    assert read_lock(jobs / "j" / LOCK_NAME)[0].token == taker.token, "the stopped run removed the taker's lock"
