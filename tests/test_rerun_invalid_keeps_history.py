"""--rerun-invalid re-runs only invalid trials (all or one kind) and keeps each earlier try."""

import json

from typer.testing import CliRunner

from task_factory import make_task, record_of

from flows.cli.main import app


def test_rerun_invalid_of_one_kind_keeps_earlier_tries(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "no-reward", test_sh="#!/bin/bash\necho nothing\n")
    make_task(ds, "good")
    first = run_job(ds, job_name="j")
    assert record_of(first, "no-reward").validity.kind == "verifier"
    job_dir = tmp_path / "jobs" / "j"
    good_before = (job_dir / "trials" / "good.oracle.1" / "trial.json").read_text()

    # re-running only harness-invalid trials touches nothing here
    res = CliRunner().invoke(app, ["resume", str(job_dir), "--rerun-invalid=harness"])
    assert res.exit_code == 0, res.output
    assert not (job_dir / "attempts").exists()

    second = run_job(ds, job_name="j", rerun_invalid="verifier")
    rec = record_of(second, "no-reward")
    assert rec.previous_tries == 1
    old = json.loads((job_dir / "attempts" / "no-reward.oracle.1" / "1" / "trial.json").read_text())
    assert old["validity"]["kind"] == "verifier"
    assert (job_dir / "trials" / "good.oracle.1" / "trial.json").read_text() == good_before

    report = (job_dir / "report.md").read_text()
    section = report.split("## Trials that took more than one try (1)")[1].split("\n## ")[0]
    assert "| oracle | no-reward | 1 | 2 | 1 | 0 | invalid: verifier |" in section, section

    third = run_job(ds, job_name="j", rerun_invalid="all")
    assert record_of(third, "no-reward").previous_tries == 2
    assert sorted(p.name for p in (job_dir / "attempts" / "no-reward.oracle.1").iterdir()) == ["1", "2"]


def test_bad_rerun_kind_exits_2(tmp_path):
    res = CliRunner().invoke(app, ["resume", str(tmp_path), "--rerun-invalid=bogus"])
    assert res.exit_code == 2 and "--rerun-invalid" in res.output
