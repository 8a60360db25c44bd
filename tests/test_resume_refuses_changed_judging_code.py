"""A job's identity covers the code that judges trials (tbflow's version and the source of its
classification, reward parsing, verifier wrapper, process-group kill and records): continuing a
job recorded by other judging code is refused with what changed, unless --force-new."""

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from task_factory import make_task
from flows.cli.main import app
from tasks_lib.records.job_identity import judge_identity

ROOT = Path(__file__).resolve().parents[1]


def test_judging_code_is_hashed_file_by_file(tmp_path):
    ids = judge_identity()
    assert "tasks_lib/trial/trial_verdict.py" in ids.files and "tasks_lib/judge/rewards.py" in ids.files
    assert all((ROOT / src).is_file() for src in ids.files), "keys are paths relative to the repository"


@pytest.mark.docker
def test_resume_across_a_judging_code_change_is_refused_unless_force_new(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "t")
    run_job(ds, job_name="j")
    job_file = tmp_path / "jobs" / "j" / "job.json"
    job = json.loads(job_file.read_text())
    # as if the job had been recorded by a tbflow whose reward parsing differed
    job["identity"]["judge"]["files"]["tasks_lib/judge/rewards.py"] = "0" * 64
    job["identity"]["judge"]["version"] = "0.0.1"
    job_file.write_text(json.dumps(job))

    refused = CliRunner().invoke(app, ["run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "j"])
    assert refused.exit_code == 2, refused.output
    assert "tbflow's judging code changed: tasks_lib/judge/rewards.py" in refused.output
    assert "tbflow version: 0.0.1 -> " in refused.output
    resumed = CliRunner().invoke(app, ["resume", str(tmp_path / "jobs" / "j")])
    assert resumed.exit_code == 2 and "tasks_lib/judge/rewards.py" in resumed.output, resumed.output

    fresh = run_job(ds, job_name="j", force_new=True)
    assert Path(fresh.job_dir).name.startswith("j.") and len(fresh.records) == 1
