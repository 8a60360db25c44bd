"""Issue 10: one job ran on one machine only. A job with ``shards=2`` is split into flow runs of
the trial deployment; two workers (separate working dirs, sharing only the job storage) run
them. One worker is killed mid-job with its shard (as when a machine is lost): Prefect's
zombie automation (deployments/crash-zombie-runs.yaml) crashes that shard's run, the job ends
with those trials unrecorded, and running the job again records exactly them, once, on the
worker that is left. Every trial ends with exactly one record and one completed trial run."""

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from prefect_stack import ROOT, Api, clean_env, free_port, start_session, stop_session
from task_factory import make_task

VENV = ROOT / ".venv" / "bin"
N_TRIALS = 10
COORDINATOR = """
import sys
from flows.job_flow import job_flow
state = job_flow(dataset=sys.argv[1], jobs_dir=sys.argv[2], job_name="spread", shards=2, concurrency=2,
                 return_state=True)
print("STATE", state.type.value, state.message)
print("UNFINISHED", len(state.result().unfinished))
"""


def _sh(cmd: str, env: dict, cwd: Path = ROOT) -> str:
    res = subprocess.run(["bash", "-c", cmd], env=env, cwd=cwd, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{cmd}:\n{res.stdout}\n{res.stderr}"
    return res.stdout


def _flow_run_pid_of(worker_pid: int) -> tuple[int, str] | None:
    """The flow-run process a worker started (its child) and that run's id, from /proc."""
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            ppid = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            if ppid != worker_pid:
                continue
            env = dict(x.split("=", 1) for x in (d / "environ").read_text().split("\0") if "=" in x)
        except (OSError, IndexError, ValueError):
            continue
        if env.get("PREFECT__FLOW_RUN_ID"):
            return int(d.name), env["PREFECT__FLOW_RUN_ID"]
    return None


@pytest.mark.docker
def test_two_workers_run_one_job_and_a_lost_workers_trials_are_recorded_once(docker_ready, tmp_path):
    ds, jobs = tmp_path / "ds", tmp_path / "shared" / "jobs"
    for i in range(N_TRIALS):
        make_task(ds, f"t{i:02d}", solve="sleep 6\n")
    port = free_port()
    env = clean_env(tmp_path / "prefect-home", PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
                    PREFECT_FLOWS_HEARTBEAT_FREQUENCY="30", PREFECT_SERVER_ANALYTICS_ENABLED="false",
                    PATH=f"{VENV}:{os.environ['PATH']}")
    procs = {"server": start_session([str(VENV / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
                                      str(port)], env, tmp_path, tmp_path / "server.log")}
    try:
        _sh("prefect server status --wait --timeout 300", env)
        _sh("prefect work-pool create tbflow --type process --overwrite", env)
        _sh("prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml", env)
        _sh("prefect automation create --from-file deployments/crash-zombie-runs.yaml", env)
        for name in ("a", "b"):
            wd = tmp_path / f"worker-{name}"
            wd.mkdir()
            procs[name] = start_session([str(VENV / "prefect"), "worker", "start", "--pool", "tbflow", "--work-queue",
                                         "trials", "--limit", "1", "--name", f"worker-{name}"], env, wd,
                                        wd / "worker.log")
        api = Api(f"http://127.0.0.1:{port}/api")
        coordinate = [str(VENV / "python"), "-c", COORDINATOR, str(ds), str(jobs)]
        first = start_session(coordinate, env, ROOT, tmp_path / "coordinator-1.log")
        procs["coordinator"] = first
        b_run = _kill_worker_after_its_first_record(procs["b"], api, jobs / "spread", tmp_path)
        assert first.wait(timeout=400) == 0, (tmp_path / "coordinator-1.log").read_text()
        out1 = (tmp_path / "coordinator-1.log").read_text()
        assert "STATE COMPLETED" in out1 and "UNFINISHED 0" not in out1, out1
        recorded_first = {p.parent.name: p.read_bytes() for p in (jobs / "spread" / "trials").glob("*/trial.json")}
        assert 0 < len(recorded_first) < N_TRIALS

        res = subprocess.run(coordinate, env=env, cwd=ROOT, capture_output=True, text=True, timeout=400)
        assert "STATE COMPLETED" in res.stdout and "UNFINISHED 0" in res.stdout, res.stdout + res.stderr

        records = {p.parent.name: p.read_bytes() for p in (jobs / "spread" / "trials").glob("*/trial.json")}
        assert len(records) == N_TRIALS
        for tid, data in recorded_first.items():
            assert records[tid] == data, f"{tid} was recorded again on resume"
        (crashed,) = api.flow_runs(flow_runs={"id": {"any_": [b_run]}})
        b_trials = set(crashed["parameters"]["trial_ids"])
        for _ in range(240):  # the server records task-run states from events: later on a loaded machine
            trial_runs = [t for t in api.post("/task_runs/filter", {"limit": 200})
                          if t["name"] in records and t["state"]["type"] == "COMPLETED"]
            if {t["name"] for t in trial_runs} >= set(records) - b_trials:
                break
            time.sleep(1)
        names = [t["name"] for t in trial_runs]
        assert len(names) == len(set(names)), f"a trial completed twice: {sorted(names)}"
        # a killed shard may have written a record and died before Prefect heard its run finish
        assert set(records) - set(names) <= b_trials, sorted(set(records) - set(names))
        assert all({"job:spread", "dataset:ds", "harness:oracle"} <= set(t["tags"]) for t in trial_runs), trial_runs
        assert b_trials & set(recorded_first), "the killed worker's shard recorded nothing"
        assert {t["flow_run_id"] for t in trial_runs} - {b_run}, "the other worker ran nothing"
        assert crashed["state"]["type"] == "CRASHED", crashed["state"]
        assert (jobs / "spread" / "report.md").is_file()
    finally:
        for key in ("coordinator", "a", "b", "server"):
            if key in procs:
                stop_session(procs[key], grace=10)


def _kill_worker_after_its_first_record(worker, api: Api, job_dir: Path, tmp_path: Path) -> str:
    """Wait until worker b's shard has recorded a trial, then SIGKILL the worker and its flow run
    (a lost machine: no hook runs, no state is reported). Returns that shard's flow run id."""
    deadline = time.time() + 300
    while time.time() < deadline:
        found = _flow_run_pid_of(worker.pid)
        if found:
            pid, run_id = found
            (run,) = api.flow_runs(flow_runs={"id": {"any_": [run_id]}})
            mine = run["parameters"].get("trial_ids", [])
            done = [t for t in mine if (job_dir / "trials" / t / "trial.json").is_file()]
            if done:
                assert len(done) < len(mine), "worker b's shard finished before it could be killed"
                os.killpg(worker.pid, signal.SIGKILL)  # the worker first: it must not report the crash
                os.kill(pid, signal.SIGKILL)
                worker.wait(timeout=30)
                return run_id
        time.sleep(0.3)
    raise AssertionError("worker b never recorded a trial: " + (tmp_path / "worker-b" / "worker.log").read_text()[-3000:])
