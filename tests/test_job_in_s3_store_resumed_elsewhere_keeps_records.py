"""A job whose ``--jobs-dir`` is an ``s3://`` URL lives in the store: its records, logs and
reports land in the bucket, and a run of the same job from another working directory with an
empty local copy (another machine, as far as tbflow can tell) keeps the recorded trials and runs
only the missing ones. The report and the output name the URL. The store's credentials (given in
the environment) appear nowhere: not in the bucket, the local copies, the output, the Prefect
database (parameters, logs, artifacts), nor inside the trial containers."""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from s3_store import files_under, s3, scan_for_secrets  # noqa: F401 - s3 is a fixture
from task_factory import make_task

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "flows.cli.main"]


def _cli(args, cwd, env, timeout=600):
    return subprocess.run([*CLI, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


@pytest.mark.docker
def test_store_job_resumed_from_empty_copy_runs_only_missing(docker_ready, s3, tmp_path):  # noqa: F811
    ds = tmp_path / "tasks"
    shutil.copytree(ROOT / "examples" / "tasks", ds)
    make_task(ds, "env-dump", solve="env > /logs/agent/env.txt\ntr '\\0' '\\n' < /proc/1/environ >> /logs/agent/env.txt\n")
    url = f"s3://{s3.bucket}/team/jobs"
    env = dict(os.environ, PYTHONPATH=str(ROOT), PREFECT_HOME=str(tmp_path / "prefect-home"),
               TBFLOW_STORE_CACHE=str(tmp_path / "cache-a"))
    env.pop("PREFECT_API_URL", None)  # a home of its own: each command's server stops with it
    first = _cli(["run", str(ds), "--harness", "oracle", "--jobs-dir", url, "--job-name", "j", "-n", "2"],
                 cwd=ROOT, env=env)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "scored: 5   invalid: 0" in first.stdout, first.stdout
    assert f"{url}/j" in first.stdout + first.stderr

    fs = s3.fs()
    job = f"{s3.bucket}/team/jobs/j"
    keys = set(fs.find(job))
    for name in ("job.json", "report.md", "results.json", "junit.xml"):
        assert f"{job}/{name}" in keys, sorted(keys)
    trials = ["env-dump", "fix-config", "status-server", "sum-csv", "word-count"]
    for t in trials:
        assert f"{job}/trials/{t}.oracle.1/trial.json" in keys, sorted(keys)
        assert f"{job}/trials/{t}.oracle.1/verifier/reward.txt" in keys, sorted(keys)
    assert not any(k.endswith(".tbflow.lock") for k in keys), "the store's lock is released at the end"
    report = fs.cat_file(f"{job}/report.md").decode()
    assert f"{url}/j (working copy " in report, report[:1500]
    dump = fs.cat_file(f"{job}/trials/env-dump.oracle.1/agent/env.txt").decode()
    assert "PATH=" in dump, dump  # the container's environment was captured, so the scan below means something

    # another machine: an empty local copy, another working directory; two trials lost their records
    kept = {t: fs.cat_file(f"{job}/trials/{t}.oracle.1/trial.json") for t in trials}
    for t in ("sum-csv", "word-count"):
        fs.rm(f"{job}/trials/{t}.oracle.1", recursive=True)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env_b = dict(env, TBFLOW_STORE_CACHE=str(tmp_path / "cache-b"))
    second = _cli(["resume", f"{url}/j"], cwd=elsewhere, env=env_b)
    assert second.returncode == 0, second.stdout + second.stderr
    out = second.stdout + second.stderr
    assert "(3 already recorded, kept)" in out, out
    assert "scored: 5   invalid: 0" in second.stdout, second.stdout
    fs = s3.fs()
    for t in ("env-dump", "fix-config", "status-server"):
        assert fs.cat_file(f"{job}/trials/{t}.oracle.1/trial.json") == kept[t], f"{t} was run again"
    for t in ("sum-csv", "word-count"):
        again = fs.cat_file(f"{job}/trials/{t}.oracle.1/trial.json")
        assert again != kept[t] and b'"status": "scored"' in again
    assert "cache-b" in fs.cat_file(f"{job}/report.md").decode()  # the report names the copy that wrote it

    blobs = {k: fs.cat_file(k) for k in fs.find(s3.bucket)}
    blobs |= files_under(tmp_path / "cache-a", tmp_path / "cache-b", tmp_path / "prefect-home")
    blobs |= {"first run output": (first.stdout + first.stderr).encode(),
              "second run output": (second.stdout + second.stderr).encode()}
    assert any(k.endswith("prefect.db") for k in blobs), "the Prefect database was scanned"
    assert scan_for_secrets(blobs) == []
