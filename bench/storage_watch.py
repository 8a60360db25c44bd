"""``storage_mb`` held by tbflow's watch (issue 29): how far past the bound an agent gets, and what
the watch costs an honest agent, against the same agent on a task without ``storage_mb``.

Four oracle trials, one at a time: an honest agent (3 MB of data and 5000 small files, the shape
of a package install) without and with a bound, and two agents that write past a 50 MB bound, one
in a burst (400 MB at disk speed), one trickling (10 MB every 0.2 s). Reported per trial: the
verdict, the agent stage's duration, and for the stopped ones the bytes the watch measured.

Usage: .venv/bin/python bench/storage_watch.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from flows.local_server.prefect_settings import configure_embedded_prefect  # noqa: E402

configure_embedded_prefect()

from task_factory import make_task, run_job_flow  # noqa: E402

HONEST = ("head -c 3000000 /dev/urandom > /app/data.bin\nmkdir -p /app/pkg\n"
          "for i in $(seq 50); do mkdir -p /app/pkg/d$i; for j in $(seq 100); do echo \"$i $j\" > /app/pkg/d$i/f$j; "
          "done; done\necho ok > /app/done.txt\n")
BURST = "head -c 400M /dev/zero > /app/fill || true\nsleep 120\n"
TRICKLE = "for i in $(seq 40); do head -c 10M /dev/zero > /app/fill$i; sleep 0.2; done\nsleep 120\n"


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="tbflow-bench-storage-") as tmp:
        ds = Path(tmp) / "ds"
        make_task(ds, "honest-unbounded", solve=HONEST, check="test -s /app/done.txt")
        make_task(ds, "honest-bounded-200", solve=HONEST, check="test -s /app/done.txt", extra_toml="storage_mb = 200\n")
        make_task(ds, "burst-bounded-50", solve=BURST, agent_timeout=600, extra_toml="storage_mb = 50\n")
        make_task(ds, "trickle-bounded-50", solve=TRICKLE, agent_timeout=600, extra_toml="storage_mb = 50\n")
        result = run_job_flow(ds, Path(tmp) / "jobs", job_name="storage", concurrency=1)
        for rec in sorted(result.records, key=lambda r: r.spec.task_name):
            evidence = Path(tmp) / "jobs" / "storage" / "trials" / rec.trial_id / "storage.txt"
            measured = None
            if evidence.is_file():
                measured = int(evidence.read_text().split("as allocated on the host's disk: ")[1].split()[0])
            print(json.dumps({"task": rec.spec.task_name, "verdict": rec.validity.status, "reward": rec.validity.reward,
                              "agent_sec": rec.agent.duration_sec if rec.agent else None,
                              "measured_mb": round(measured / 2**20, 1) if measured else None}))


if __name__ == "__main__":
    main()
