"""Unnamed runs started in the same second get their own job dirs (a timestamp plus a random
suffix) instead of sharing one job: both finish, each with its own complete records."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from task_factory import make_task

from flows.job.job_plan import default_job_name

ROOT = Path(__file__).resolve().parents[1]


def test_default_names_are_readable_and_differ_within_a_second():
    names = {default_job_name() for _ in range(50)}
    assert len(names) == 50
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\d__\d\d-\d\d-\d\d-[0-9a-f]{6}", n) for n in names), names


@pytest.mark.docker
def test_two_unnamed_runs_at_once_get_two_jobs(docker_ready, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "t1")
    make_task(ds, "t2")
    procs = [subprocess.Popen([sys.executable, "-m", "flows.cli.main", "run", "ds", "--harness", "nop"], cwd=tmp_path,
                              env={**__import__("os").environ, "PYTHONPATH": str(ROOT)},
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=300)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    job_dirs = sorted((tmp_path / "jobs").iterdir())
    assert len(job_dirs) == 2, job_dirs
    ids = set()
    for d in job_dirs:
        job = json.loads((d / "job.json").read_text())
        ids.add(job["job_id"])
        for tid in ("t1.nop.1", "t2.nop.1"):
            rec = json.loads((d / "trials" / tid / "trial.json").read_text())
            assert rec["validity"]["status"] == "scored" and rec["spec"]["job_id"] == job["job_id"], rec["validity"]
    assert len(ids) == 2
    for out in outs:
        assert "scored: 2   invalid: 0" in out, out
