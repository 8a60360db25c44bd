"""``kill -9`` of tbflow used to orphan its embedded Prefect server for good (a 200 MB uvicorn
alive half an hour later, holding the SQLite database) and to leave the trial container running.
Now the server dies with tbflow, its guard removes the job's containers first, and a resume
finishes the job."""

import json
import subprocess

import pytest

from task_factory import make_task
from tbflow_process import (ROOT, TBFLOW, alive, job_containers, running_job_containers, server_processes,
                            wait_until)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("per_command_server")]

def test_kill_9_of_tbflow_takes_its_server_and_containers_along(docker_ready, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "slow", solve="sleep 15\n")  # killed long before it ends
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen([*TBFLOW, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", "j"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: proc.poll() is not None or running_job_containers(docker_ready, jobs / "j"), 240,
                   "the trial container")
        assert proc.poll() is None, proc.stdout.read()
        servers = server_processes(proc.pid)
        assert servers, "tbflow started no server process"
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_until(lambda: not any(alive(p) for p in servers), 60, "the server to exit after kill -9 of tbflow")
    assert job_containers(docker_ready, jobs / "j") == []
    assert not (jobs / "j" / "trials" / "slow.oracle.1" / "trial.json").exists()

    done = subprocess.run([*TBFLOW, "resume", str(jobs / "j")], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((jobs / "j" / "trials" / "slow.oracle.1" / "trial.json").read_text())
    assert record["validity"]["status"] == "scored", record["validity"]
