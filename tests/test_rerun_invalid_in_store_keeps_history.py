"""``--rerun-invalid`` on a job in an ``s3://`` store, from another machine's empty copy: the
invalid trial's earlier try moves to ``attempts/<trial>/1/`` in the store (nothing lost), and the
new try's record replaces it under ``trials/``; a scored trial is kept as it was. A report
written on a machine that did not run a failed trial still quotes that trial's verifier output."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from s3_store import s3  # noqa: F401 - a fixture
from task_factory import make_task

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "flows.cli.main"]


@pytest.mark.docker
def test_rerun_invalid_moves_earlier_try_to_attempts_in_store(docker_ready, s3, tmp_path):  # noqa: F811
    ds = tmp_path / "ds"
    make_task(ds, "fine")
    make_task(ds, "no-reward", test_sh="#!/bin/bash\necho 'wrote no reward'\n")  # invalid: verifier
    url = f"s3://{s3.bucket}/jobs"
    env = dict(os.environ, PYTHONPATH=str(ROOT), TBFLOW_STORE_CACHE=str(tmp_path / "cache-a"))
    first = subprocess.run([*CLI, "run", str(ds), "--jobs-dir", url, "--job-name", "j"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=600)
    assert first.returncode == 0 and "scored: 1   invalid: 1" in first.stdout, first.stdout + first.stderr
    fs = s3.fs()
    job = f"{s3.bucket}/jobs/j"
    before = {t: fs.cat_file(f"{job}/trials/{t}.oracle.1/trial.json") for t in ("fine", "no-reward")}

    env_c = dict(env, TBFLOW_STORE_CACHE=str(tmp_path / "cache-c"))  # all recorded: only the report is written
    seen = subprocess.run([*CLI, "resume", f"{url}/j"], cwd=tmp_path, env=env_c, capture_output=True, text=True,
                          timeout=600)
    assert seen.returncode == 0 and "already recorded" in seen.stderr, seen.stdout + seen.stderr
    rewritten = json.loads(fs.cat_file(f"{job}/results.json"))
    (tail,) = [t["verifier_tail"] for t in rewritten["trials"] if t["record"]["spec"]["trial_id"] == "no-reward.oracle.1"]
    assert tail == ["wrote no reward"], tail

    env_b = dict(env, TBFLOW_STORE_CACHE=str(tmp_path / "cache-b"))
    again = subprocess.run([*CLI, "resume", f"{url}/j", "--rerun-invalid"], cwd=tmp_path, env=env_b,
                           capture_output=True, text=True, timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    fs = s3.fs()
    assert fs.cat_file(f"{job}/attempts/no-reward.oracle.1/1/trial.json") == before["no-reward"]
    assert fs.exists(f"{job}/attempts/no-reward.oracle.1/1/verifier/test-stdout.txt"), fs.find(f"{job}/attempts")
    new = fs.cat_file(f"{job}/trials/no-reward.oracle.1/trial.json")
    assert new != before["no-reward"] and b'"previous_tries": 1' in new, new[:400]
    assert fs.cat_file(f"{job}/trials/fine.oracle.1/trial.json") == before["fine"]
