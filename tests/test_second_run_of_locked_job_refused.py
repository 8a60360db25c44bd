"""A second run of a job that a live run holds (``run --job-name X`` again, ``resume``) is refused
at once with exit 2 and a line naming the holder; it does not touch the running job, which ends
scored. ``report`` (read-only) still works. Once the first run ended, the job can be resumed."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from task_factory import make_task
from tbflow_process import trial_containers

from tasks_lib.store.job_lock import HOST, LOCK_NAME

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "flows.cli.main"]


def _cli(*args, timeout=120, env=None):
    return subprocess.run([*CLI, *args], cwd=ROOT, capture_output=True, text=True, timeout=timeout, env=env)


def _let_agent_finish(docker, tmp_path) -> None:
    (container,) = trial_containers(docker, tmp_path, "slow.oracle.1")
    assert container.exec_run(["touch", "/app/go"]).exit_code == 0


@pytest.mark.docker
def test_second_run_and_resume_refused_while_first_runs(docker_ready, tmp_path):
    ds = tmp_path / "ds"
    # the agent runs until the test lets it finish: the refusals happen while it runs, however slow they are
    make_task(ds, "slow", solve="until [ -f /app/go ]; do sleep 0.2; done\necho ok > /app/done\n",
              check="[ -f /app/done ]", agent_timeout=900)
    jobs = tmp_path / "jobs"
    first = subprocess.Popen([*CLI, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", "j"], cwd=ROOT,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 400  # a fresh PREFECT_HOME migrates first; slow on a loaded machine
        while not trial_containers(docker_ready, tmp_path, "slow.oracle.1"):
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline, "the first run never started its trial"
            time.sleep(0.2)
        assert (jobs / "j" / LOCK_NAME).is_file()

        for n, args in enumerate((["run", str(ds), "--jobs-dir", str(jobs), "--job-name", "j"],
                                  ["resume", str(jobs / "j")])):
            # a fresh PREFECT_HOME: a Prefect server started by the refused command would leave its
            # database there, so an empty home proves the refusal came before any server start
            home = tmp_path / f"refused-home-{n}"
            home.mkdir()
            env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}  # its own server, if any
            res = _cli(*args, env={**env, "PREFECT_HOME": str(home)})
            assert res.returncode == 2, res.stdout + res.stderr
            line = res.stderr.strip()
            assert len(line.splitlines()) == 1 and "Traceback" not in line, line
            assert f"pid {first.pid}" in line and f"host {HOST}" in line and "since" in line, line
            assert not list(home.rglob("*.db")), "the refused command started a Prefect server first"
            assert trial_containers(docker_ready, tmp_path, "slow.oracle.1"), \
                "the refused run touched the running job's container"

        rep = _cli("report", str(jobs / "j"), "--no-write")
        assert rep.returncode == 0, rep.stderr

        _let_agent_finish(docker_ready, tmp_path)
        out, _ = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, out
    assert "scored: 1   invalid: 0" in out, out
    assert not (jobs / "j" / LOCK_NAME).exists(), "the lock is released at the end of the run"
    again = _cli("resume", str(jobs / "j"))
    assert again.returncode == 0 and "already recorded" in again.stderr, again.stderr
