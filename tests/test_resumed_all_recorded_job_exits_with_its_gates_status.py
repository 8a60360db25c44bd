"""Issue 31: resuming a job whose trials were all recorded, with ``--fail-on-invalid``, printed
``tbflow: error: prefect: 1`` and exited 1 for the wrong reason: the gate's ``typer.Exit`` (a
``RuntimeError`` in click) was caught by the "Prefect could not start" refusal. The command now
exits with the gate's status and prints the gate's message.
"""

from __future__ import annotations

from task_factory import make_task
from typer.testing import CliRunner

from flows.cli.main import app


def test_all_recorded_job_with_a_tripped_gate_exits_1_with_the_gates_message(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "no-reward", test_sh="#!/bin/bash\necho checked but wrote nothing\n")
    jobs = tmp_path / "jobs"
    first = run_job(ds, jobs_dir=jobs, job_name="gated")
    assert [r.validity.status for r in first.records] == ["invalid"]

    res = CliRunner().invoke(app, ["run", str(ds), "--jobs-dir", str(jobs), "--job-name", "gated",
                                   "--fail-on-invalid"])
    assert "all 1 trials already recorded" in res.output, res.output
    assert res.exit_code == 1, res.output
    assert "prefect" not in res.output, res.output
    assert "1 invalid" in res.output and "--fail-on-invalid" in res.output, res.output
