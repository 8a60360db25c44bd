"""Through a real Prefect flow run (the job flow served by a runner, a real server on 127.0.0.1):

- cancelling the run through the API removes its trial containers;
- ``kill -9`` of the flow run's process is noticed by the runner, which marks the run crashed and
  calls the ``on_crashed`` hook with keyword arguments (``flow=``, ``flow_run=``, ``state=``). The
  hook's parameter used to be ``flow_``, so every such call failed with TypeError and both trial
  containers kept running. Now they are removed, and a resume completes the job.
"""

import json
import os
import signal
import subprocess
import sys

import pytest

from prefect_stack import send
from task_factory import make_task
from tbflow_process import ROOT, TBFLOW, alive, cmdline, descendants, wait_until

from tasks_lib.container.docker_client import LABEL_FLOW_RUN

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("per_command_server")]


@pytest.fixture
def served(tmp_path):
    """A runner serving the job flow against its own server; yields (api url, runner pid)."""
    url_file = tmp_path / "api-url"
    env = dict(os.environ, PREFECT_RUNNER_POLL_FREQUENCY="1")
    env.pop("PREFECT_API_URL", None)
    runner = subprocess.Popen([sys.executable, str(ROOT / "tests" / "served_job_flow.py"), str(url_file)], cwd=ROOT,
                              env=env, start_new_session=True, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True)
    try:
        wait_until(lambda: runner.poll() is not None or url_file.exists(), 300, "the server")
        assert runner.poll() is None, runner.stdout.read()
        api = url_file.read_text()
        wait_until(lambda: send("GET", f"{api}/deployments/name/tbflow-job/tbflow-test").status_code == 200, 120,
                   "the deployment")
        yield api, runner.pid
    finally:
        if runner.poll() is None:
            os.killpg(runner.pid, signal.SIGTERM)
            try:
                runner.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(runner.pid, signal.SIGKILL)
                runner.wait()


def _start_run(api: str, ds, jobs) -> str:
    dep = send("GET", f"{api}/deployments/name/tbflow-job/tbflow-test").json()
    params = {"dataset": str(ds), "jobs_dir": str(jobs), "job_name": "j", "concurrency": 2}
    resp = send("POST", f"{api}/deployments/{dep['id']}/create_flow_run", json={"parameters": params})
    resp.raise_for_status()
    return resp.json()["id"]


def _run_containers(client, run_id: str, running: bool = False) -> list[str]:
    """The run's containers: with ``running``, its trial containers only (each trial also has a
    filler container, created and never started, that owns its judge volumes)."""
    filters = {"label": f"{LABEL_FLOW_RUN}={run_id}", **({"status": "running"} if running else {})}
    return [c["Id"] for c in client.api.containers(all=not running, filters=filters)]


def _state(api: str, run_id: str) -> str:
    return send("GET", f"{api}/flow_runs/{run_id}").json()["state"]["type"]


def _two_slow_trials(tmp_path, agent_sec: int = 20):
    ds = tmp_path / "ds"
    for name in ("a-slow", "b-slow"):
        make_task(ds, name, solve=f"sleep {agent_sec}\n", agent_timeout=agent_sec + 60)
    return ds, tmp_path / "jobs"


def test_cancel_via_api_removes_containers(served, docker_ready, tmp_path):
    api, _ = served
    ds, jobs = _two_slow_trials(tmp_path, agent_sec=600)  # only the cancellation can end them in time
    run_id = _start_run(api, ds, jobs)
    wait_until(lambda: len(_run_containers(docker_ready, run_id, running=True)) == 2, 300, "both trial containers")
    send("POST", f"{api}/flow_runs/{run_id}/set_state",
               json={"state": {"type": "CANCELLING", "name": "Cancelling"}, "force": True}).raise_for_status()
    wait_until(lambda: not _run_containers(docker_ready, run_id), 90, "the containers to be removed")
    wait_until(lambda: _state(api, run_id) == "CANCELLED", 90, "the run to be cancelled")


def test_kill_9_of_flow_run_process_runs_crashed_hook(served, docker_ready, tmp_path):
    api, runner_pid = served
    ds, jobs = _two_slow_trials(tmp_path)
    run_id = _start_run(api, ds, jobs)
    wait_until(lambda: len(_run_containers(docker_ready, run_id, running=True)) == 2, 300, "both trial containers")
    # the runner starts each flow run in a child process (multiprocessing "spawn")
    flow_procs = [p for p in descendants(runner_pid) if "spawn_main" in cmdline(p)]
    assert flow_procs, [cmdline(p) for p in descendants(runner_pid)]
    for pid in flow_procs:
        os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not any(alive(p) for p in flow_procs), 10, "the flow run process to die")
    wait_until(lambda: _state(api, run_id) == "CRASHED", 60, "the runner to mark the run crashed")
    wait_until(lambda: not _run_containers(docker_ready, run_id), 60, "the crashed hook to remove the containers")

    done = subprocess.run([*TBFLOW, "resume", str(jobs / "j")], cwd=ROOT, capture_output=True, text=True,
                          timeout=600, env={k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"})
    assert done.returncode == 0, done.stdout + done.stderr
    for trial in ("a-slow.oracle.1", "b-slow.oracle.1"):
        record = json.loads((jobs / "j" / "trials" / trial / "trial.json").read_text())
        assert record["validity"]["status"] == "scored", record["validity"]
