"""Per-trial overhead of tbflow against the raw Docker floor, measured in the same run.

overhead = trial wall time − agent (solve) time − verifier time, for the oracle on a trivial task
whose image is already built, at concurrency 1. The floor is what any runner must pay at least:
``docker run -d --init``, two ``docker exec``, ``docker rm -f`` (the docker CLI, as a user would),
and the same four calls through the Docker SDK (no CLI process start-up).

Usage: .venv/bin/python bench/trial_overhead.py [--trials N] [--out bench/out/overhead.json]
Target (issue 2): median overhead ≤ 1.5 × the CLI floor. Also printed: the whole trial's wall
time against the floor, which counts the verifier wrapper's own work (process listing, writing
the tests) that the overhead metric books as verify time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from flows.local_server.prefect_settings import configure_embedded_prefect  # noqa: E402

configure_embedded_prefect()

from task_factory import make_task  # noqa: E402


def floor_cli(image: str, n: int) -> list[float]:
    times = []
    for _ in range(n):
        t = time.perf_counter()
        cid = subprocess.run(["docker", "run", "-d", "--init", "--network", "none", image, "sleep", "infinity"],
                             check=True, capture_output=True, text=True).stdout.strip()
        subprocess.run(["docker", "exec", cid, "true"], check=True)
        subprocess.run(["docker", "exec", cid, "sh", "-c", "echo 1 > /tmp/reward.txt"], check=True)
        subprocess.run(["docker", "rm", "-f", cid], check=True, capture_output=True)
        times.append(time.perf_counter() - t)
    return times


def floor_sdk(image: str, n: int) -> list[float]:
    from tasks_lib.container.docker_client import get_client

    client = get_client()
    times = []
    for _ in range(n):
        t = time.perf_counter()
        c = client.containers.run(image, ["sleep", "infinity"], detach=True, init=True, network_mode="none")
        c.exec_run(["true"])
        c.exec_run(["sh", "-c", "echo 1 > /tmp/reward.txt"])
        c.remove(force=True)
        times.append(time.perf_counter() - t)
    return times


def run_tbflow(dataset: Path, jobs: Path, n: int) -> list[dict]:
    from flows.job.job_config import JobConfig
    from flows.job_flow import job_flow

    # warm-up job: builds the image and starts Prefect's local server
    job_flow(**JobConfig(dataset=str(dataset), jobs_dir=str(jobs), job_name="warmup").flow_parameters())
    result = job_flow(**JobConfig(dataset=str(dataset), jobs_dir=str(jobs), job_name="measured",
                                  attempts=n).flow_parameters())
    rows = []
    for r in result.records:
        solve, verify = r.agent.duration_sec, r.verifier.duration_sec
        rows.append({"trial": r.trial_id, "wall": r.duration_sec, "solve": solve, "verify": verify,
                     "overhead": r.duration_sec - solve - verify, "status": r.validity.status})
    return rows


def summary(xs: list[float]) -> dict:
    return {"median": round(statistics.median(xs), 3), "min": round(min(xs), 3), "max": round(max(xs), 3), "n": len(xs)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--out", default=str(ROOT / "bench" / "out" / "overhead.json"))
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="tbflow-bench-") as tmp:
        ds = Path(tmp) / "ds"
        make_task(ds, "trivial", solve="echo done > /app/done.txt\n", check="[ -f /app/done.txt ]")
        rows = run_tbflow(ds / "trivial", Path(tmp) / "jobs", args.trials)
        image = json.loads((Path(tmp) / "jobs" / "measured" / "trials" / "trivial.oracle.1" / "trial.json")
                           .read_text())["image"]["tag"]
        cli = floor_cli(image, args.trials)
        sdk = floor_sdk(image, args.trials)
    assert all(r["status"] == "scored" for r in rows), rows
    result = {
        "tbflow_overhead": summary([r["overhead"] for r in rows]),
        "tbflow_trial_wall": summary([r["wall"] for r in rows]),
        "floor_docker_cli": summary(cli),
        "floor_docker_sdk": summary(sdk),
    }
    cli_floor = result["floor_docker_cli"]["median"]
    result["ratio_overhead_to_cli_floor"] = round(result["tbflow_overhead"]["median"] / cli_floor, 2)
    # the stricter view: the whole trial (its trivial solve and verify included, as the floor's
    # two execs are) against the floor, so nothing moved into "solve"/"verify" time hides
    result["ratio_trial_wall_to_cli_floor"] = round(result["tbflow_trial_wall"]["median"] / cli_floor, 2)
    result["trials"] = rows
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k != "trials"}, indent=2))


if __name__ == "__main__":
    main()
