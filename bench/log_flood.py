"""An agent that floods its log: the trial dir stays bounded and the runner's memory flat.

One oracle trial whose solution prints ``--flood-mb`` MiB to stdout (its ``agent/oracle.txt``)
and writes as much again into ``/logs/agent/dump.bin``, run with ``--max-log-mb``. Reported:
the trial dir's size on disk, the cuts the record lists, the trial's wall time, and the peak RSS
of this (runner) process, which downloads and cuts the logs as a stream.

Usage: .venv/bin/python bench/log_flood.py [--flood-mb 1024] [--max-log-mb 50]
Target (issue 8): trial dir ≤ 2 × max-log-mb + a few KiB; peak RSS independent of the flood.
"""

from __future__ import annotations

import argparse
import json
import resource
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


def dir_bytes(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file() and not f.is_symlink())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--flood-mb", type=int, default=1024)
    parser.add_argument("--max-log-mb", type=int, default=50)
    args = parser.parse_args()
    from flows.job.job_config import JobConfig
    from flows.job_flow import job_flow

    mib = 1024 * 1024
    with tempfile.TemporaryDirectory(prefix="tbflow-bench-flood-") as tmp:
        ds = Path(tmp) / "ds"
        solve = (f"head -c {args.flood_mb * mib} /dev/zero | tr '\\0' 'x'\n"
                 f"head -c {args.flood_mb * mib} /dev/zero > /logs/agent/dump.bin\necho solved > /app/done.txt\n")
        make_task(ds, "flood", solve=solve, check="[ -f /app/done.txt ]", agent_timeout=600)
        rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        result = job_flow(config=JobConfig(dataset=str(ds), jobs_dir=str(Path(tmp) / "jobs"), job_name="flood",
                                           max_log_mb=args.max_log_mb))
        wall = time.perf_counter() - t0
        rec = result.records[0]
        trial = Path(tmp) / "jobs" / "flood" / "trials" / rec.trial_id
        out = {
            "flood_mib_per_file": args.flood_mb, "max_log_mb": args.max_log_mb,
            "verdict": rec.validity.status, "reward": rec.validity.reward,
            "trial_dir_mib": round(dir_bytes(trial) / mib, 2),
            "cut": [c.model_dump() for c in rec.logs.cut] if rec.logs else None,
            "trial_wall_sec": round(wall, 1), "agent_sec": rec.agent.duration_sec,
            "verifier_and_download_sec": rec.verifier.duration_sec,
            "peak_rss_mib_before": round(rss_before / 1024, 1),
            "peak_rss_mib_after": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1),
        }
        print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
