"""Issue 10: one job ran on one machine only, and a lost machine's trials waited for someone to
run the job again. A job with ``shards=2`` is split into flow runs of the trial deployment; two
workers (separate working dirs, sharing only the job storage) run them. One worker is killed
mid-job with its shard (as when a machine is lost): Prefect's zombie automation
(deployments/crash-zombie-runs.yaml) crashes that shard's run, and the coordinator itself
re-submits exactly the trials it left unrecorded, which the worker that is left runs. The job
completes in ONE run: every trial has exactly one record and one completed trial run, records
written before the kill are byte-identical afterwards, and the job's log says what was lost.

Issue 19: the automation matched every flow run, so a coordinator with Prefect's default
heartbeat (180 s, as the documented coordinator worker had) was crashed mid-job and then read its
own Crashed as "the job is stopping": it re-submitted nothing. The coordinator here runs with the
default heartbeat on purpose, longer than the automation's window, and must stay Running until it
ends Completed (never Crashed in its state history)."""

import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from prefect_stack import ROOT, Api, clean_env, free_port, send, start_session, stop_session
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


#: heartbeats every 30 s (the least Prefect accepts, as documented) and a lost run crashed after
#: 60 s without one (the documented file says 90 s): the same automation, 30 s sooner per test
HEARTBEAT_SEC, ZOMBIE_AFTER_SEC = 30, 60


def _seconds_between(a: str, b: str) -> float:
    from datetime import datetime

    return (datetime.fromisoformat(b.replace("Z", "+00:00")) - datetime.fromisoformat(a.replace("Z", "+00:00"))).total_seconds()


def _fast_zombie_automation(tmp_path: Path) -> Path:
    """deployments/crash-zombie-runs.yaml with only its ``within`` shortened (test-only)."""
    documented = (ROOT / "deployments" / "crash-zombie-runs.yaml").read_text()
    assert documented.count("within: 90\n") == 1, "the documented automation changed: update this test"
    fast = tmp_path / "crash-zombie-runs.yaml"
    fast.write_text(documented.replace("within: 90\n", f"within: {ZOMBIE_AFTER_SEC}\n"))
    return fast


@pytest.mark.docker
def test_two_workers_run_one_job_and_a_lost_workers_trials_are_recorded_once(docker_ready, tmp_path):
    ds, jobs = tmp_path / "ds", tmp_path / "shared" / "jobs"
    for i in range(N_TRIALS):
        make_task(ds, f"t{i:02d}", solve="sleep 6\n")
    port = free_port()
    env = clean_env(tmp_path / "prefect-home", PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
                    PREFECT_FLOWS_HEARTBEAT_FREQUENCY=str(HEARTBEAT_SEC), PREFECT_SERVER_ANALYTICS_ENABLED="false",
                    PATH=f"{VENV}:{os.environ['PATH']}")
    procs = {"server": start_session([str(VENV / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
                                      str(port)], env, tmp_path, tmp_path / "server.log")}
    try:
        _sh("prefect server status --wait --timeout 300", env)
        _sh("prefect work-pool create tbflow --type process --overwrite", env)
        _sh("prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml", env)
        _sh(f"prefect automation create --from-file {_fast_zombie_automation(tmp_path)}", env)
        for name in ("a", "b"):
            wd = tmp_path / f"worker-{name}"
            wd.mkdir()
            procs[name] = start_session([str(VENV / "prefect"), "worker", "start", "--pool", "tbflow", "--work-queue",
                                         "trials", "--limit", "1", "--name", f"worker-{name}"], env, wd,
                                        wd / "worker.log")
        api = Api(f"http://127.0.0.1:{port}/api")
        coordinate = [str(VENV / "python"), "-c", COORDINATOR, str(ds), str(jobs)]
        default_heartbeat = {k: v for k, v in env.items() if k != "PREFECT_FLOWS_HEARTBEAT_FREQUENCY"}
        procs["coordinator"] = start_session(coordinate, default_heartbeat, ROOT, tmp_path / "coordinator.log")
        b_run, at_kill = _kill_worker_after_its_first_record(procs["b"], api, jobs / "spread", tmp_path)
        assert procs["coordinator"].wait(timeout=600) == 0, (tmp_path / "coordinator.log").read_text()
        out = (tmp_path / "coordinator.log").read_text()
        assert "STATE COMPLETED" in out and "UNFINISHED 0" in out, out

        records = {p.parent.name: p.read_bytes() for p in (jobs / "spread" / "trials").glob("*/trial.json")}
        assert len(records) == N_TRIALS
        for tid, data in at_kill.items():
            assert records[tid] == data, f"{tid} was recorded again after the loss"
        (crashed,) = api.flow_runs(flow_runs={"id": {"any_": [b_run]}})
        assert crashed["state"]["type"] == "CRASHED", crashed["state"]
        b_trials = set(crashed["parameters"]["trial_ids"])
        assert b_trials & set(at_kill), "the killed worker's shard recorded nothing"
        (rerun,) = api.flow_runs(flow_runs={"name": {"any_": [f"{crashed['name']} (re-run 1)"]}})
        # exactly what the lost shard left: a recorded trial is never submitted again
        assert set(rerun["parameters"]["trial_ids"]) == b_trials - set(at_kill), rerun["parameters"]
        assert rerun["state"]["type"] == "COMPLETED", rerun["state"]
        shard_runs = api.flow_runs(flows={"name": {"any_": ["tbflow-trials"]}})
        assert len(shard_runs) == 3, [r["name"] for r in shard_runs]
        # a shard submitted again for every trial (all recorded now) runs none of them
        _sh(f"prefect deployment run tbflow-trials/trials --param job_dir={jobs / 'spread'} "
            f"--param 'trial_ids={json.dumps(sorted(records))}' --flow-run-name again --watch", env)
        (again,) = api.flow_runs(flow_runs={"name": {"any_": ["again"]}})
        assert again["state"]["type"] == "COMPLETED", again["state"]
        for _ in range(120):  # the run's last logs reach the server a moment after its state
            if any(f"0 of its {N_TRIALS} trials to run" in x["message"] for x in api.logs(again["id"])):
                break
            time.sleep(0.5)
        else:
            raise AssertionError([x["message"] for x in api.logs(again["id"])])
        after = {p.parent.name: p.read_bytes() for p in (jobs / "spread" / "trials").glob("*/trial.json")}
        assert after == records

        for _ in range(240):  # the server records task-run states from events: later on a loaded machine
            trial_runs = [t for t in api.post("/task_runs/filter", {"limit": 200})
                          if t["name"] in records and t["state"]["type"] == "COMPLETED"]
            if {t["name"] for t in trial_runs} >= set(records) - b_trials | set(rerun["parameters"]["trial_ids"]):
                break
            time.sleep(1)
        names = [t["name"] for t in trial_runs]
        assert len(names) == len(set(names)), f"a trial completed twice: {sorted(names)}"
        # a killed shard may have written a record and died before Prefect heard its run finish
        assert set(records) - set(names) <= set(at_kill), sorted(set(records) - set(names))
        assert all({"job:spread", "dataset:ds", "harness:oracle"} <= set(t["tags"]) for t in trial_runs), trial_runs
        by_run = {t["flow_run_id"] for t in trial_runs}
        assert by_run - {b_run}, "the other worker ran nothing"
        assert {t["name"] for t in trial_runs if t["flow_run_id"] == rerun["id"]} == set(rerun["parameters"]["trial_ids"])

        (job_run,) = api.flow_runs(flows={"name": {"any_": ["tbflow-job"]}})
        assert job_run["state"]["type"] == "COMPLETED", job_run["state"]
        history = send("GET", f"{api.url}/flow_run_states/", params={"flow_run_id": job_run["id"]}).json()
        assert "CRASHED" not in [h["type"] for h in history], [h["type"] for h in history]
        started = min(h["timestamp"] for h in history if h["type"] == "RUNNING")
        ended = max(h["timestamp"] for h in history if h["type"] == "COMPLETED")
        assert _seconds_between(started, ended) > ZOMBIE_AFTER_SEC, "the job was shorter than the automation's window"
        lines = [x["message"] for x in api.logs(job_run["id"])]
        lost = [x for x in lines if "(re-run 1)" in x]
        assert len(lost) == 1, lines
        n = len(rerun["parameters"]["trial_ids"])
        assert (f"shard 2/2 (flow run '{crashed['name']}') ended Crashed" in lost[0] or
                f"shard 1/2 (flow run '{crashed['name']}') ended Crashed" in lost[0]), lost[0]
        assert f"lost with {n} of its {len(b_trials)} trials not recorded: re-submitted them" in lost[0], lost[0]
        assert (jobs / "spread" / "report.md").is_file()
        assert "Trials without a record" not in (jobs / "spread" / "report.md").read_text()
    finally:
        for key in ("coordinator", "a", "b", "server"):
            if key in procs:
                stop_session(procs[key], grace=10)


def _kill_worker_after_its_first_record(worker, api: Api, job_dir: Path,
                                        tmp_path: Path) -> tuple[str, dict[str, bytes]]:
    """Wait until worker b's shard has recorded a trial, then SIGKILL the worker and its flow run
    (a lost machine: no hook runs, no state is reported). Returns that shard's flow run id and the
    job's records as they were right after the kill."""
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
                return run_id, {p.parent.name: p.read_bytes() for p in (job_dir / "trials").glob("*/trial.json")}
        time.sleep(0.3)
    raise AssertionError("worker b never recorded a trial: " + (tmp_path / "worker-b" / "worker.log").read_text()[-3000:])
