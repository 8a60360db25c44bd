"""The nightly recipe of deployments/prefect.yaml on a real server and worker (issue 19).

A fixed ``job_name`` resumed last night's job every night; there was no guard against a run
starting while the last one still ran, and no view across nights. This deploys the shipped yaml
as documented, runs the ``nightly`` deployment for two scheduled nights (flow runs created with
their scheduled times, as the scheduler would) and checks: each night got its own job, named from
its *scheduled* start; a run due while a night still runs is cancelled by the deployment's
concurrency limit; the second night's ``nightly-trend`` artifact covers both nights and its
``nightly-diff`` compares it with the first; the ``nightly-retention`` deployment then removes the
older night and keeps the newest.
"""

import subprocess
import time

import pytest

from prefect_stack import ROOT, Api, clean_env, free_port, send, start_session, stop_session
from container_markers import MarkerWriter
from task_factory import make_task

from tasks_lib.container.docker_client import LABEL_JOB_DIR

VENV = ROOT / ".venv" / "bin"
NIGHT_1, NIGHT_2 = "2026-11-30T03:00:00+00:00", "2026-12-01T03:00:00+00:00"
FINAL = {"COMPLETED", "FAILED", "CRASHED", "CANCELLED"}
GO = "/tmp/tbflow-test-go"


def hold(client, jobs) -> MarkerWriter:
    """Night 1 is held, not timed: its agent waits for ``GO``, which this creates in every trial
    container under ``jobs`` once started (night 2 then passes at once)."""
    under = str(jobs.resolve())
    return MarkerWriter(client, LABEL_JOB_DIR, lambda labels: labels[LABEL_JOB_DIR].startswith(under)
                        and labels.get("tbflow.role") != "filler", (GO,))


def _wait_state(api: Api, run_id: str, states: set[str], timeout: float = 120) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        (run,) = api.flow_runs(flow_runs={"id": {"any_": [run_id]}})
        if run["state"]["type"] in states or time.monotonic() > deadline:
            return run
        time.sleep(0.3)


@pytest.mark.docker
def test_nightly_runs_get_their_own_job_not_last_nights(docker_ready, tmp_path):
    ds, jobs = tmp_path / "tasks", tmp_path / "jobs"
    make_task(ds, "alpha", solve=f"until [ -e {GO} ]; do sleep 0.1; done\n", agent_timeout=600)  # held: see hold()
    night_1_held = hold(docker_ready, jobs)
    make_task(ds, "beta")
    port = free_port()
    env = clean_env(tmp_path / "prefect-home", PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
                    PREFECT_SERVER_ANALYTICS_ENABLED="false", PATH=f"{VENV}:/usr/bin:/bin",
                    PREFECT_WORKER_QUERY_SECONDS="1")
    api = Api(f"http://127.0.0.1:{port}/api")
    procs = [start_session([str(VENV / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                           env, tmp_path, tmp_path / "server.log")]
    try:
        for cmd in ("prefect server status --wait --timeout 120",
                    "prefect work-pool create tbflow --type process --overwrite",
                    "prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml"):
            res = subprocess.run(["bash", "-c", cmd], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
            assert res.returncode == 0, f"{cmd}:\n{res.stdout}\n{res.stderr}"
        procs.append(start_session([str(VENV / "prefect"), "worker", "start", "--pool", "tbflow", "--work-queue",
                                    "default"], env, ROOT, tmp_path / "worker.log"))
        r = send("GET", f"{api.url}/deployments/name/tbflow-job/nightly")
        r.raise_for_status()
        dep = r.json()
        assert dep["parameters"]["job_name"] == "nightly-{date}"
        assert dep["global_concurrency_limit"]["limit"] == 1
        assert dep["concurrency_options"]["collision_strategy"] == "CANCEL_NEW"
        assert [s["active"] for s in dep["schedules"]] == [True]

        def night(scheduled: str) -> str:
            body = {"parameters": {"dataset": str(ds), "jobs_dir": str(jobs)},
                    "state": {"type": "SCHEDULED", "state_details": {"scheduled_time": scheduled}}}
            return api.post(f"/deployments/{dep['id']}/create_flow_run", body)["id"]

        first = night(NIGHT_1)
        running = _wait_state(api, first, {"RUNNING"} | FINAL)
        assert running["state"]["type"] == "RUNNING", running["state"]
        overlap = night(time.strftime("%Y-%m-%dT%H:%M:%S+00:00", time.gmtime()))  # due while night 1 runs
        held = _wait_state(api, overlap, {"CANCELLED", "RUNNING", "COMPLETED", "FAILED", "CRASHED"})
        assert held["state"]["type"] == "CANCELLED", held["state"]
        assert "concurrency limit" in (held["state"]["message"] or "")
        night_1_held.start()
        done = _wait_state(api, first, FINAL)
        assert done["state"]["type"] == "COMPLETED", done["state"]
        second = _wait_state(api, night(NIGHT_2), FINAL)
        assert second["state"]["type"] == "COMPLETED", second["state"]

        assert sorted(p.name for p in jobs.iterdir()) == ["nightly-2026-11-30", "nightly-2026-12-01"]
        for d in jobs.iterdir():
            assert len(list((d / "trials").glob("*/trial.json"))) == 2, d
        arts = {a["key"]: a for a in api.artifacts(second["id"]) if a["key"]}
        trend, diff = arts["nightly-trend"]["data"], arts["nightly-diff"]["data"]
        assert "nightly-2026-11-30" in trend and "nightly-2026-12-01" in trend, trend
        assert "2 night(s)" in trend and "1.000" in trend, trend
        assert "nightly-2026-11-30" in diff and "nightly-2026-12-01" in diff, diff
        assert "nightly-2026-12-01-report" in arts
        first_arts = {a["key"] for a in api.artifacts(first) if a["key"]}
        assert {"nightly-trend", "nightly-diff"} <= first_arts  # the same keys every night: a history

        r = send("GET", f"{api.url}/deployments/name/tbflow-retention/nightly-retention")
        r.raise_for_status()
        body = {"parameters": {"jobs_dir": str(jobs), "keep_jobs": 1}}
        gc = _wait_state(api, api.post(f"/deployments/{r.json()['id']}/create_flow_run", body)["id"], FINAL)
        assert gc["state"]["type"] == "COMPLETED", gc["state"]
        assert sorted(p.name for p in jobs.iterdir()) == ["nightly-2026-12-01"]  # the newest kept
        (listed,) = [a["data"] for a in api.artifacts(gc["id"]) if a["key"] == "nightly-retention"]
        assert f"removed job {jobs / 'nightly-2026-11-30'}" in listed and "kept 1" in listed, listed
    finally:
        night_1_held.stop()
        for proc in reversed(procs):
            stop_session(proc, grace=10)
