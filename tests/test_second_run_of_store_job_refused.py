"""A job in an ``s3://`` store has one owner across machines: while a run holds it, a second run
of the same job from another working copy (another machine, as far as the store can tell) is
refused at once with exit 2 and one line naming the holder, and leaves the running job alone.
A lock left by a dead run is taken over, and the run after it proceeds."""

import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from s3_store import s3  # noqa: F401 - a fixture
from task_factory import make_task
from tbflow_process import trial_containers

from tasks_lib.store.job_lock import HOST, BOOT_ID, LOCK_NAME, PID_NS, LockHolder

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "flows.cli.main"]


def _let_agent_finish(docker, tmp_path) -> None:
    (container,) = trial_containers(docker, tmp_path, "slow.oracle.1")
    assert container.exec_run(["touch", "/app/go"]).exit_code == 0


@pytest.mark.docker
def test_second_run_refused_while_first_holds_store_job(docker_ready, s3, tmp_path):  # noqa: F811
    ds = tmp_path / "ds"
    # the agent runs until the test lets it finish: the refusals happen while it runs, however slow they are
    make_task(ds, "slow", solve="until [ -f /app/go ]; do sleep 0.2; done\necho ok > /app/done\n",
              check="[ -f /app/done ]", agent_timeout=900)
    url = f"s3://{s3.bucket}/jobs"
    lock_key = f"{s3.bucket}/jobs/j/{LOCK_NAME}"
    args = ["run", str(ds), "--jobs-dir", url, "--job-name", "j"]
    env_a = dict(os.environ, PYTHONPATH=str(ROOT), TBFLOW_STORE_CACHE=str(tmp_path / "cache-a"))
    env_b = dict(os.environ, PYTHONPATH=str(ROOT), TBFLOW_STORE_CACHE=str(tmp_path / "cache-b"))
    first = subprocess.Popen([*CLI, *args], cwd=ROOT, env=env_a, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
    try:
        deadline = time.monotonic() + 400
        while not trial_containers(docker_ready, tmp_path, "slow.oracle.1"):
            assert first.poll() is None, first.stdout.read()
            assert time.monotonic() < deadline, "the first run never started its trial"
            time.sleep(0.2)
        assert s3.fs().exists(lock_key), "the running job holds its lock in the store"

        for cmd in (args, ["resume", f"{url}/j"]):
            res = subprocess.run([*CLI, *cmd], cwd=tmp_path, env=env_b, capture_output=True, text=True, timeout=300)
            assert res.returncode == 2, res.stdout + res.stderr
            line = res.stderr.strip()
            assert len(line.splitlines()) == 1 and "Traceback" not in line, line
            assert line.startswith(f"tbflow: error: {url}/j: job is in use by another tbflow run"), line
            assert f"pid {first.pid}" in line and f"host {HOST}" in line, line
            assert trial_containers(docker_ready, tmp_path, "slow.oracle.1"), \
                "the refused run touched the running job's container"
        _let_agent_finish(docker_ready, tmp_path)
        out, _ = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, out
    assert "scored: 1   invalid: 0" in out, out
    assert not s3.fs().exists(lock_key), "the lock is released at the end of the run"

    # a run killed before it could let go: its lock names a process of this host that is gone
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = LockHolder(host=HOST, boot_id=BOOT_ID, pid_ns=PID_NS, pid=dead.pid, pid_start="1", since=datetime.now(timezone.utc),
                       token="dead-run", command="tbflow run (killed)")
    s3.fs().pipe_file(lock_key, stale.model_dump_json().encode())
    again = subprocess.run([*CLI, "resume", f"{url}/j"], cwd=tmp_path, env=env_b, capture_output=True, text=True,
                           timeout=300)
    assert again.returncode == 0 and "already recorded" in again.stderr, again.stdout + again.stderr
    assert not s3.fs().exists(lock_key), "the stale lock was taken over and then released"
