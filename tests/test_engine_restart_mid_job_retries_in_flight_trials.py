"""A Docker engine restart in the middle of a job (down ~4 s) no longer ends the job at once with
"scored: 0 invalid: 0" and exited containers left: the trials in flight end as environment
failures and are retried once the engine answers, the queued trials run, the job completes with
every trial scored and exits 0, and no container is left. The engine restarted is the test's own
(``private_engine``), never the machine's."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from private_engine import PrivateEngine
from task_factory import make_task

pytestmark = pytest.mark.usefixtures("per_command_server")

ROOT = Path(__file__).resolve().parents[1]
SLOW = ("a-slow", "b-slow")


@pytest.fixture
def engine():
    eng = PrivateEngine()
    try:
        eng.start()
        eng.load_image("tbflow/base:bookworm")
        yield eng
    finally:
        eng.remove()


def _agents_running(client) -> bool:
    running = 0
    for c in client.containers.list(filters={"label": "tbflow.trial"}):
        if c.labels["tbflow.trial"].split(".")[0] in SLOW and \
                c.exec_run(["test", "-e", "/logs/agent/oracle.txt"]).exit_code == 0:
            running += 1
    return running == len(SLOW)


@pytest.mark.docker
def test_engine_restart_mid_job(engine, tmp_path):
    ds = tmp_path / "ds"
    for name in SLOW:
        make_task(ds, name, solve="sleep 15\necho ok > /app/done\n", check="[ -f /app/done ]")
    for name in ("c-queued", "d-queued"):
        make_task(ds, name, solve="echo ok > /app/done\n", check="[ -f /app/done ]")
    jobs = tmp_path / "jobs"
    env = dict(os.environ, DOCKER_HOST=engine.host)
    proc = subprocess.Popen([sys.executable, "-m", "flows.cli.main", "run", str(ds), "--jobs-dir", str(jobs),
                             "--job-name", "j", "--concurrency", "2"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        client = engine.client()
        deadline = time.monotonic() + 400  # a fresh PREFECT_HOME migrates first; slow on a loaded machine
        while not _agents_running(client):
            assert proc.poll() is None, proc.stdout.read()
            assert time.monotonic() < deadline, "the slow trials' agents never started"
            time.sleep(0.3)
        engine.stop()
        time.sleep(4)
        engine.start()
        out, _ = proc.communicate(timeout=400)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0, out
    assert "scored: 4   invalid: 0" in out, out
    for task in (*SLOW, "c-queued", "d-queued"):
        rec = json.loads((jobs / "j" / "trials" / f"{task}.oracle.1" / "trial.json").read_text())
        assert (rec["validity"]["status"], rec["validity"]["reward"]) == ("scored", 1.0), (task, rec["validity"])
        if task in SLOW:
            assert rec["env_retry_errors"], f"{task} was in flight: its first try must be an environment failure"
    assert engine.client().containers.list(all=True) == [], "containers left on the engine"
