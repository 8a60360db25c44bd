"""One 24-trial job on one worker vs the same job on two worker processes of this machine.

Both runs use a real Prefect server, the process pool and the deployments of
deployments/prefect.yaml, exactly as docs/deployments.md describes: workers serve the
``trials`` queue with ``--limit 1``, the job runs as a coordinator (here a local flow run) with
``shards`` = the number of workers and ``concurrency`` trials per shard. The job is the example
tasks × oracle × 6 attempts (24 trials), images built before timing.

Usage: PREFECT_HOME=$(mktemp -d) .venv/bin/python bench/shards.py [--concurrency 2] [--attempts 6]
Prints one JSON line per configuration (wall time of the job run, trials recorded, per-worker
trial counts, and each shard's pickup latency: from its flow run's creation by the coordinator
to a worker taking it (its first ``Pending`` state), then to its flow starting (``Running``)).
Note: both "machines" share this host's 2 cores and one Docker engine, so the speed-up
measured here is a floor of what separate machines give.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from prefect_stack import Api, send, start_server, start_session, stop_session  # noqa: E402

VENV = ROOT / ".venv" / "bin"
COORDINATOR = """
import sys, time
from flows.job_flow import job_flow
t = time.perf_counter()
state = job_flow(dataset=sys.argv[1], jobs_dir=sys.argv[2], job_name=sys.argv[3], shards=int(sys.argv[4]),
                 concurrency=int(sys.argv[5]), attempts=int(sys.argv[6]), return_state=True)
print("WALL", round(time.perf_counter() - t, 2), "STATE", state.type.value, "UNFINISHED",
      len(state.result().unfinished))
"""


def sh(cmd: str, env: dict) -> None:
    subprocess.run(["bash", "-c", cmd], env=env, cwd=ROOT, check=True, capture_output=True, timeout=300)


def _ts(text: str) -> float:
    from datetime import datetime

    return datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def pickup(api: Api, run: dict) -> dict:
    """Seconds from the shard run's creation to a worker's first Pending, and on to Running."""
    states = send("GET", f"{api.url}/flow_run_states/", params={"flow_run_id": run["id"]}).json()
    first = {}
    for st in sorted(states, key=lambda x: x["timestamp"]):
        first.setdefault(st["type"], _ts(st["timestamp"]))
    created = _ts(run["created"])
    out = {"to_worker": round(first["PENDING"] - created, 2) if "PENDING" in first else None}
    if "PENDING" in first and "RUNNING" in first:
        out["to_running"] = round(first["RUNNING"] - first["PENDING"], 2)
    return out


def run(workers: int, args, tmp: Path, env: dict, api: Api) -> dict:
    procs = []
    for i in range(workers):
        wd = tmp / f"w{workers}-{i}"
        wd.mkdir()
        procs.append(start_session([str(VENV / "prefect"), "worker", "start", "--pool", "tbflow", "--work-queue",
                                    "trials", "--limit", "1", "--name", f"bench-{workers}-{i}"],
                                   dict(env, PREFECT_FLOWS_HEARTBEAT_FREQUENCY="30"), wd,
                                   wd / "worker.log"))
    try:
        time.sleep(5)  # workers polling
        name = f"bench-{workers}w"
        res = subprocess.run([str(VENV / "python"), "-c", COORDINATOR, str(ROOT / "examples" / "tasks"),
                              str(tmp / "jobs"), name, str(workers), str(args.concurrency), str(args.attempts)],
                             env=env, cwd=ROOT, capture_output=True, text=True, timeout=3600)
        line = [x for x in res.stdout.splitlines() if x.startswith("WALL")]
        if not line:
            raise SystemExit(res.stdout + res.stderr)
        parts = line[0].split()
        records = list((tmp / "jobs" / name / "trials").glob("*/trial.json"))
        shard_runs = [r for r in api.flow_runs() if r["name"].startswith(f"{name} shard")]
        return {"workers": workers, "concurrency_per_worker": args.concurrency, "trials": len(records),
                "wall_sec": float(parts[1]), "state": parts[3], "unfinished": int(parts[5]),
                "shards": {r["name"]: len(r["parameters"]["trial_ids"]) for r in shard_runs},
                "pickup_sec": {r["name"]: pickup(api, r) for r in shard_runs}}
    finally:
        for p in procs:
            stop_session(p, grace=10)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--concurrency", type=int, default=2)
    ap.add_argument("--attempts", type=int, default=6)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tbflow-bench-shards-") as t:
        tmp = Path(t)
        env, server = start_server(tmp)
        try:
            sh("prefect work-pool create tbflow --type process --overwrite", env)
            sh("prefect --no-prompt deploy --all --prefect-file deployments/prefect.yaml", env)
            sh(f"{VENV / 'tbflow'} run examples/tasks --jobs-dir {tmp / 'warm'} --job-name warm", env)  # images
            api = Api(env["PREFECT_API_URL"])
            for workers in (1, 2):
                print(json.dumps(run(workers, args, tmp, env, api)), flush=True)
        finally:
            stop_session(server, grace=10)


if __name__ == "__main__":
    main()
