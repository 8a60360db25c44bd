"""Embedded mode batches the local server's task-run recorder (flows/local_server/prefect_settings.py) to
save CPU; that must not lose history: after the CLI process ends, its Prefect database holds
every stage of every trial in its final state (stage runs are named ``<trial> · <stage>``), and
the report artifacts of the job's run."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from task_factory import make_task

ROOT = Path(__file__).resolve().parents[1]
STAGES = ("prepare-harness", "build-image", "run-agent", "kill-process-groups", "run-verifier", "classify")


def test_every_task_run_is_recorded_completed_after_the_process_exits(docker_ready, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "one")
    make_task(ds, "two")
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env["PREFECT_HOME"] = str(home)
    # no PREFECT_API_URL: the command's own server, whose database this test reads after it
    out = subprocess.run([sys.executable, "-m", "flows.cli.main", "run", str(ds), "--harness", "oracle",
                          "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "j"],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stdout[-2000:] + out.stderr[-2000:]

    with sqlite3.connect(home / "prefect.db") as db:
        rows = db.execute("select name, state_type from task_run").fetchall()
        keys = {k for (k,) in db.execute("select key from artifact").fetchall()}
    states: dict[str, list[str]] = {}
    for name, state in rows:
        states.setdefault(name.split(" · ")[-1], []).append(state)
    for stage in STAGES:
        assert states.get(stage) == ["COMPLETED", "COMPLETED"], (stage, states)
    assert states.get("one.oracle.1") == ["COMPLETED"] and states.get("two.oracle.1") == ["COMPLETED"], states
    assert {"j-report", "j-trials", "j-progress"} <= keys, keys
