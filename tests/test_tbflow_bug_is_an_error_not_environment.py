"""A bug in tbflow itself ends the trial as status ``error`` (traceback in error.txt), never as
invalid: environment; the summary, report, JUnit and the CLI's exit code show it, and resume runs
the trial again, keeping the errored try in history."""

import json
import xml.etree.ElementTree as ET

import pytest
from typer.testing import CliRunner

from task_factory import make_task, record_of

from flows.cli.job_start import ExitCode
from flows.cli.main import app


def _bug(*args, **kwargs):
    raise KeyError("injected tbflow bug")


@pytest.mark.docker
def test_tbflow_bug_is_error_shown_everywhere_and_rerun_on_resume(run_job, tmp_path, monkeypatch):
    import flows.trial_flow as trial_flow

    ds = tmp_path / "ds"
    make_task(ds, "t")
    job = tmp_path / "jobs" / "j"
    monkeypatch.setattr(trial_flow, "kill_process_groups", _bug)
    res = CliRunner().invoke(app, ["run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "j"])
    assert res.exit_code == ExitCode.TBFLOW_ERROR, res.output
    assert "tbflow errors" in res.output and "t.oracle.1" in res.output
    monkeypatch.undo()

    rec = json.loads((job / "trials" / "t.oracle.1" / "trial.json").read_text())
    assert rec["validity"]["status"] == "error" and rec["validity"]["kind"] is None
    assert rec["error"]["kind"] == "internal" and rec["validity"]["evidence"] == "error.txt"
    assert "KeyError: 'injected tbflow bug'" in (job / "trials" / "t.oracle.1" / "error.txt").read_text()
    summary = json.loads((job / "results.json").read_text())["summaries"][0]
    assert (summary["errors"], summary["invalid"], summary["invalid_by_kind"]["environment"]) == (1, 0, 0)
    assert "## tbflow errors (1)" in (job / "report.md").read_text()
    err = ET.parse(job / "junit.xml").getroot().find(".//testcase/error")
    assert err is not None and err.get("type") == "internal"

    again = record_of(run_job(ds, job_name="j"), "t")
    assert (again.validity.status, again.validity.reward, again.previous_tries) == ("scored", 1.0, 1)
    old = json.loads((job / "attempts" / "t.oracle.1" / "1" / "trial.json").read_text())
    assert old["validity"]["status"] == "error"
