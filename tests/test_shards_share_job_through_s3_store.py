"""One job over two workers that share nothing but an ``s3://`` job store: no shared directory,
each worker (and the coordinator) has its own working copy. The coordinator hands the shards the
job's URL; each shard pulls ``job.json``, runs its trials and uploads them; the coordinator's
progress follows the records as they appear in the store, and its report lands there. No
credential reaches the Prefect server (parameters, logs, artifacts)."""

import json
import os
import socket
import subprocess

import pytest

from prefect_stack import ROOT, clean_env, free_port, start_session, stop_session
from s3_store import files_under, s3, scan_for_secrets  # noqa: F401 - s3 is a fixture
from task_factory import make_task

VENV = ROOT / ".venv" / "bin"
N_TRIALS = 6
COORDINATOR = """
import sys
from flows.job_flow import job_flow
state = job_flow(dataset=sys.argv[1], jobs_dir=sys.argv[2], job_name="spread", shards=2, concurrency=2,
                 return_state=True)
print("STATE", state.type.value, state.message)
print("UNFINISHED", len(state.result().unfinished))
"""


def _sh(cmd: str, env: dict) -> str:
    res = subprocess.run(["bash", "-c", cmd], env=env, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, f"{cmd}:\n{res.stdout}\n{res.stderr}"
    return res.stdout


@pytest.mark.docker
def test_two_workers_share_a_job_only_through_the_store(docker_ready, s3, tmp_path):  # noqa: F811
    ds = tmp_path / "ds"
    for i in range(N_TRIALS):
        make_task(ds, f"t{i:02d}", solve="sleep 3\n")
    url = f"s3://{s3.bucket}/jobs"
    port = free_port()
    env = clean_env(tmp_path / "prefect-home", PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
                    PREFECT_SERVER_ANALYTICS_ENABLED="false", PATH=f"{VENV}:{os.environ['PATH']}",
                    TBFLOW_STORE_CACHE=str(tmp_path / "cache-coordinator"))
    procs = {"server": start_session([str(VENV / "prefect"), "server", "start", "--host", "127.0.0.1", "--port",
                                      str(port)], env, tmp_path, tmp_path / "server.log")}
    try:
        _sh("prefect server status --wait --timeout 300", env)
        _sh("prefect work-pool create tbflow --type process --overwrite", env)
        _sh("prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml", env)
        for name in ("a", "b"):
            wd = tmp_path / f"worker-{name}"
            wd.mkdir()
            procs[name] = start_session([str(VENV / "prefect"), "worker", "start", "--pool", "tbflow", "--work-queue",
                                         "trials", "--limit", "1", "--name", f"worker-{name}"],
                                        dict(env, TBFLOW_STORE_CACHE=str(tmp_path / f"cache-{name}")), wd,
                                        wd / "worker.log")
        res = subprocess.run([str(VENV / "python"), "-c", COORDINATOR, str(ds), url], env=env, cwd=ROOT,
                             capture_output=True, text=True, timeout=600)
        assert "STATE COMPLETED" in res.stdout and "UNFINISHED 0" in res.stdout, res.stdout + res.stderr[-5000:]
    finally:
        for key in ("a", "b", "server"):
            if key in procs:
                stop_session(procs[key], grace=10)

    fs = s3.fs()
    job = f"{s3.bucket}/jobs/spread"
    trials = sorted(p.split("/")[-2] for p in fs.glob(f"{job}/trials/*/trial.json"))
    assert trials == [f"t{i:02d}.oracle.1" for i in range(N_TRIALS)], trials
    assert fs.exists(f"{job}/report.md") and f"{url}/spread" in fs.cat_file(f"{job}/report.md").decode()
    ran_on = [json.loads(fs.cat_file(p))["ran_on"] for p in fs.glob(f"{job}/trials/*/trial.json")]
    assert {r["flow_name"] for r in ran_on} == {"tbflow-trials"}, ran_on  # each trial says which shard ran it
    assert len({r["flow_run_id"] for r in ran_on}) == 2 and {r["host"] for r in ran_on} == {socket.gethostname()}
    assert fs.cat_file(f"{job}/report.md").decode().count("(a shard)") == 2
    ran = {name: {p.parent.name for p in (tmp_path / f"cache-{name}").glob("*/spread/trials/*/agent")}
           for name in ("a", "b")}
    assert ran["a"] and ran["b"] and not ran["a"] & ran["b"], ran  # each worker ran (and uploaded) its own shard
    assert not list((tmp_path / "cache-coordinator").glob("*/spread/trials/*/agent")), \
        "the coordinator ran trials itself"
    blobs = files_under(tmp_path / "prefect-home", tmp_path / "cache-a", tmp_path / "cache-b",
                        tmp_path / "cache-coordinator")
    assert any(k.endswith(".db") for k in blobs), sorted(blobs)[:20]
    assert scan_for_secrets(blobs) == []
