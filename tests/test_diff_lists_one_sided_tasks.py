"""tbflow diff lists tasks scored on one side only instead of dropping them."""

import typer
from report_fixtures import make_job, make_trial, write_job_dir
from typer.testing import CliRunner

from flows.cli.report_cli import register
from tasks_lib.report.job_diff import diff_jobs
from tasks_lib.report.render_diff import render_diff
from tasks_lib.report.results_build import load_results


def _jobs(tmp_path):
    a = [make_trial("shared", "codex"), make_trial("only-a", "codex"),
         make_trial("broken-in-b", "codex", reward=0.0), make_trial("broken-in-a", "codex", invalid="environment"),
         make_trial("broken-both", "codex", invalid="verifier")]
    b = [make_trial("shared", "codex", job_id="job-2"), make_trial("only-b", "codex", job_id="job-2"),
         make_trial("broken-in-b", "codex", invalid="harness", job_id="job-2"),
         make_trial("broken-in-a", "codex", job_id="job-2"),
         make_trial("broken-both", "codex", invalid="environment", job_id="job-2")]
    ja = write_job_dir(tmp_path / "a", make_job(a, name="before"), a)
    jb = write_job_dir(tmp_path / "b", make_job(b, name="after", job_id="job-2"), b)
    return ja, jb


def test_one_sided_tasks_are_listed_with_the_reason(tmp_path):
    ja, jb = _jobs(tmp_path)
    d = diff_jobs(load_results(ja), load_results(jb))
    (arm,) = d.arms
    outcome = {t.task: t.outcome for t in arm.tasks}
    assert outcome == {"broken-both": "neither", "broken-in-a": "b_only", "broken-in-b": "a_only",
                       "only-a": "a_only", "only-b": "b_only", "shared": "tie"}
    assert arm.paired.tasks == 1  # only "shared" is scored on both sides

    md = render_diff(d)
    assert "### Scored on one side only (4)" in md
    assert "| only-a | ✅ 1.00 (1/1 passed) | — absent | not in job B |" in md
    assert "| only-b | — absent | ✅ 1.00 (1/1 passed) | not in job A |" in md
    assert "| broken-in-b | ❌ 0.00 (0/1 passed) | ⚠️ only invalid (1) | only invalid in B (1) |" in md
    assert "| broken-in-a | ⚠️ only invalid (1) | ✅ 1.00 (1/1 passed) | only invalid in A (1) |" in md
    assert "### Scored on neither side (1)" in md
    assert "| broken-both | ⚠️ only invalid (1) | ⚠️ only invalid (1) |" in md


def test_diff_cli(tmp_path):
    ja, jb = _jobs(tmp_path)
    app = typer.Typer()
    register(app)
    result = CliRunner().invoke(app, ["diff", str(ja), str(jb), "-o", str(tmp_path / "diff.md")])
    assert result.exit_code == 0, result.output
    assert result.stdout == (tmp_path / "diff.md").read_text(encoding="utf-8")
    assert "# tbflow diff: A `before` vs B `after`" in result.stdout

    missing = CliRunner().invoke(app, ["diff", str(ja), str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "not a tbflow job directory" in missing.stderr

    bad = CliRunner().invoke(app, ["diff", str(ja), str(jb), "--harness-a", "ghost"])
    assert bad.exit_code == 2
    assert bad.stderr.strip() == "error: --harness-a: no harness 'ghost' in that job; it has: codex"
