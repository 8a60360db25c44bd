"""``--prices`` is copied into the job (``prices.json``), so it travels with it: in an ``s3://``
store it is uploaded with ``job.json`` and pulled into another machine's empty copy, and a resume
runs after the user's file is gone (the job's own copy prices its trials alike)."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from s3_store import s3  # noqa: F401 - a fixture

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "flows.cli.main"]
TABLE = {"some-model": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}}


@pytest.mark.docker
def test_prices_uploaded_pulled_and_kept_on_resume(docker_ready, s3, tmp_path):  # noqa: F811
    prices = tmp_path / "my-prices.json"
    prices.write_text(json.dumps(TABLE))
    url = f"s3://{s3.bucket}/team/jobs"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PREFECT_HOME=str(tmp_path / "prefect-home"),
               TBFLOW_STORE_CACHE=str(tmp_path / "cache-a"))
    env.pop("PREFECT_API_URL", None)
    first = subprocess.run([*CLI, "run", str(ROOT / "examples" / "tasks"), "--include", "word-count", "--jobs-dir",
                            url, "--job-name", "p", "--prices", str(prices)], cwd=ROOT, env=env, capture_output=True,
                           text=True, timeout=600)
    assert first.returncode == 0, first.stdout + first.stderr
    stored = json.loads(s3.fs().cat_file(f"{s3.bucket}/team/jobs/p/prices.json"))
    assert stored == TABLE
    prices.unlink()
    env["TBFLOW_STORE_CACHE"] = str(tmp_path / "cache-b")  # another machine's empty copy
    again = subprocess.run([*CLI, "resume", f"{url}/p"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=600)
    assert again.returncode == 0, again.stdout + again.stderr
    copies = list((tmp_path / "cache-b").rglob("prices.json"))
    assert [json.loads(c.read_text()) for c in copies] == [TABLE], copies
