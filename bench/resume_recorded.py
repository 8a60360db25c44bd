"""Resume of a fully recorded job: wall time of `tbflow resume` and containers it starts.

Records a real 100-trial job once (25 trivial tasks × nop × 4 attempts, concurrency 4), then
times `tbflow resume JOB_DIR` as a user runs it (a fresh process) and counts the containers the
Docker engine created meanwhile. Target (issue 4): ≤ 3 s and 0 containers.

Usage: .venv/bin/python bench/resume_recorded.py [--tasks 25] [--attempts 4] [--repeat 5]
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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=25)
    ap.add_argument("--attempts", type=int, default=4)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    from flows.job.job_config import JobConfig
    from flows.job_flow import job_flow
    from tasks_lib.container.docker_client import get_client

    client = get_client()
    with tempfile.TemporaryDirectory(prefix="tbflow-bench-resume-") as tmp:
        ds = Path(tmp) / "ds"
        for i in range(args.tasks):
            make_task(ds, f"task-{i:03d}")
        t = time.perf_counter()
        first = job_flow(**JobConfig(dataset=str(ds), harnesses=["nop"], attempts=args.attempts, concurrency=4,
                                     jobs_dir=str(Path(tmp) / "jobs"), job_name="j").flow_parameters())
        record_wall = time.perf_counter() - t
        n = len(first.records)
        walls, created = [], []
        for _ in range(args.repeat):
            since = time.time()
            t = time.perf_counter()
            res = subprocess.run([str(ROOT / ".venv" / "bin" / "tbflow"), "resume", str(Path(tmp) / "jobs" / "j")],
                                 capture_output=True, text=True)
            walls.append(time.perf_counter() - t)
            assert res.returncode == 0, res.stderr
            events = client.events(since=since, until=time.time() + 0.5, decode=True,
                                   filters={"type": "container", "event": "create"})
            created.append(sum(1 for _ in events))
    out = {"trials_recorded": n, "record_job_wall_sec": round(record_wall, 1),
           "resume_wall_sec": {"median": round(statistics.median(walls), 2), "max": round(max(walls), 2),
                               "all": [round(w, 2) for w in walls]},
           "containers_created_during_resume": created}
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
