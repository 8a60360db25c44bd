"""tbflow report: writes the three files and prints the asked-for rendering, from records alone."""

import json
import xml.etree.ElementTree as ET

import typer
from report_fixtures import make_job, make_trial, write_job_dir
from typer.testing import CliRunner

from flows.cli.report_cli import register


def _app():
    app = typer.Typer()
    register(app)
    return app


def _job(tmp_path):
    trials = [make_trial("a", "codex"), make_trial("b", "codex", reward=0.0),
              make_trial("c", "codex", invalid="harness")]
    return write_job_dir(tmp_path, make_job(trials), trials)


def test_default_writes_files_and_prints_summary(tmp_path):
    job_dir = _job(tmp_path)
    result = CliRunner().invoke(_app(), ["report", str(job_dir)])
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[:2] == [
        "demo-job: 3 trials, 2 scored, 1 invalid",
        "  codex: mean reward 0.500 (95% CI 0.095-0.905) over 2 scored; 1 passed, 1 invalid; cost unknown",
    ]
    for name in ("report.md", "junit.xml", "results.json"):
        assert (job_dir / name).is_file()


def test_format_md_prints_exactly_the_report(tmp_path):
    job_dir = _job(tmp_path)
    result = CliRunner().invoke(_app(), ["report", str(job_dir), "--format", "md"])
    assert result.exit_code == 0
    assert result.stdout == (job_dir / "report.md").read_text(encoding="utf-8")
    assert result.stdout.startswith("# tbflow report: demo-job\n")


def test_format_junit_and_json(tmp_path):
    job_dir = _job(tmp_path)
    junit = CliRunner().invoke(_app(), ["report", str(job_dir), "-f", "junit", "--no-write"])
    assert junit.exit_code == 0
    assert ET.fromstring(junit.stdout.encode()).get("tests") == "3"
    assert not (job_dir / "junit.xml").exists()  # --no-write leaves the job dir alone
    data = json.loads(CliRunner().invoke(_app(), ["report", str(job_dir), "-f", "json", "--no-write"]).stdout)
    assert data["summaries"][0]["invalid"] == 1


def test_bad_format_is_a_usage_error(tmp_path):
    result = CliRunner().invoke(_app(), ["report", str(_job(tmp_path)), "--format", "html"])
    assert result.exit_code == 2
