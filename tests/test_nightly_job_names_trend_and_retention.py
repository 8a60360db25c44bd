"""Fast checks of the nightly recipe's pure parts (issue 19): job name templates, the trend over
nights and which job directories retention removes. The real server, worker and schedule are in
tests/test_nightly_deployment_runs_each_night_as_its_own_job.py."""

import re
import subprocess
import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli.main import app
from flows.job.job_config import JobConfig, JobName
from flows.job.nightly import nightly_markdown
from report_fixtures import make_job, make_trial, write_job_dir
from tasks_lib.errors import InputError
from tasks_lib.job.job_name_template import (JOB_NAME_PATTERN, TEMPLATE_PATTERN, night_of, render_job_name,
                                             template_regex)
from tasks_lib.store.retention import JobEntry, parse_age, remove_job, scan, select
from tasks_lib.report.report_files import write_reports
from tasks_lib.report.results_build import load_results
from tasks_lib.report.trend import trend_of

NIGHT = datetime(2026, 12, 1, 3, 0, tzinfo=timezone.utc)


def test_a_fixed_name_would_resume_so_a_template_renders_the_scheduled_night():
    assert render_job_name("nightly-{date}", NIGHT) == "nightly-2026-12-01"
    assert render_job_name("nightly-{date}", NIGHT + timedelta(days=1)) == "nightly-2026-12-02"
    assert render_job_name("run-{datetime}", NIGHT) == "run-2026-12-01T0300Z"
    # a retry of the same flow run has the same scheduled start: the same job, continued
    assert render_job_name("nightly-{date}", NIGHT) == render_job_name("nightly-{date}", NIGHT)
    berlin = timezone(timedelta(hours=1))
    assert render_job_name("n-{date}", datetime(2026, 12, 1, 0, 30, tzinfo=berlin)) == "n-2026-11-30"  # UTC
    assert render_job_name("plain", NIGHT) == "plain" and render_job_name(None, NIGHT) is None


@pytest.mark.parametrize("bad, words", [("nightly-{day}", "unknown field {day}"), ("n-{date", "without its pair"),
                                        ("n-date}", "without its pair"), ("{}", "unknown field {}")])
def test_bad_template_is_one_line_naming_job_name(bad, words):
    with pytest.raises(InputError) as exc:
        render_job_name(bad, NIGHT)
    assert exc.value.where == "job_name" and words in exc.value.message and "\n" not in str(exc.value)


def test_server_side_pattern_admits_templates_and_plain_names_only():
    pattern = JobName.__metadata__[0].metadata[0].pattern  # what the deployment's schema carries
    assert pattern == TEMPLATE_PATTERN
    for ok in ("nightly", "nightly-{date}", "{datetime}", "a.b_c-{date}-{datetime}"):
        assert re.match(pattern, ok), ok
    for bad in ("../x", "-x", "x/{date}", "x-{day}", "x-{date", "", "a" * 129):
        assert not re.match(pattern, bad), bad
    assert not re.match(JOB_NAME_PATTERN, "x-{date}")


def test_config_renders_a_template_from_now_and_the_cli_refuses_a_bad_one_naming_the_flag(tmp_path):
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    assert JobConfig(dataset="x", job_name="cli-{date}").job_name in (f"cli-{today}", )
    res = CliRunner().invoke(app, ["run", str(tmp_path), "--job-name", "n-{day}"])
    assert res.exit_code == 2 and "--job-name" in res.output and "{date}" in res.output, res.output


def test_names_of_other_templates_are_not_nights_of_this_one():
    assert night_of("nightly-{date}", "nightly-2026-12-01") == datetime(2026, 12, 1, tzinfo=timezone.utc)
    assert night_of("nightly-{date}", "nightly-2026-12-01-extra") is None
    assert night_of("nightly-{date}", "weekly-2026-12-01") is None
    assert night_of("nightly-{date}", "nightly-latest") is None
    assert template_regex("x-{date}-{date}").match("x-2026-12-01-2026-12-01")


def _night(root: Path, day: int, rewards: dict[str, float | None], harness: str = "oracle") -> Path:
    name = f"nightly-2026-12-{day:02d}"
    trials = [make_trial(t, harness, reward=r, invalid=None if r is not None else "environment", job_id=name)
              for t, r in rewards.items()]
    job = make_job(trials, job_id=name, name=name)
    job.started_at = datetime(2026, 12, day, 3, tzinfo=timezone.utc)
    job.ended_at = job.started_at + timedelta(hours=1)
    d = write_job_dir(root, job, trials)
    write_reports(d)
    return d


def test_trend_shows_each_nights_mean_with_its_reports_interval_and_keeps_invalid_apart(tmp_path):
    d1 = _night(tmp_path, 1, {"a": 1.0, "b": 0.0, "c": 1.0, "d": None})
    d2 = _night(tmp_path, 2, {"a": 1.0, "b": 1.0, "c": 1.0, "d": 1.0})
    results = [(datetime(2026, 12, n, tzinfo=timezone.utc), load_results(d), d.name) for n, d in ((2, d2), (1, d1))]
    trend = trend_of("nightly-{date}", results + [(datetime(2026, 11, 30, tzinfo=timezone.utc), None, "nightly-x")])
    assert [n.job_name for n in trend.nights] == ["nightly-2026-12-01", "nightly-2026-12-02"]  # oldest first
    first = trend.nights[0].harnesses[0]
    assert first.mean_reward == pytest.approx(2 / 3) and first.scored == 3 and first.invalid == 1
    summary = load_results(d1).summaries[0]
    assert first.interval == summary.reward_interval and first.interval.low < 2 / 3 < first.interval.high
    assert trend.unreadable == ["nightly-x"]
    assert len(trend_of("nightly-{date}", results, last=1).nights) == 1


def test_diff_names_the_previous_night_and_trend_lists_both(tmp_path):
    _night(tmp_path, 1, {"a": 1.0, "b": 0.0})
    _night(tmp_path, 3, {"a": 1.0, "b": 1.0})
    _night(tmp_path, 5, {"a": 0.0, "b": 1.0})  # a later night: not this one's "previous"
    (tmp_path / "weekly-2026-12-02").mkdir()
    trend, diff = nightly_markdown("nightly-{date}", tmp_path / "nightly-2026-12-03")
    assert all(f"nightly-2026-12-0{n}" in trend for n in (1, 3, 5)) and "weekly" not in trend
    assert "nightly-2026-12-01" in diff and "nightly-2026-12-03" in diff and "nightly-2026-12-05" not in diff
    _, first = nightly_markdown("nightly-{date}", tmp_path / "nightly-2026-12-01")
    assert "nothing to compare" in first


def _entry(name: str, day: int, ended: bool = True, held: str | None = None) -> JobEntry:
    start = datetime(2026, 12, day, 3, tzinfo=timezone.utc)
    return JobEntry(name=name, path=f"/j/{name}", started_at=start,
                    ended_at=start + timedelta(hours=1) if ended else None, held_by=held)


def test_retention_never_removes_unfinished_or_held_jobs_and_keeps_the_newest():
    entries = [_entry(f"n-{d}", d) for d in range(1, 8)]
    entries += [_entry("n-crashed", 2, ended=False), _entry("n-running", 1, held="pid 7 on host h")]
    now = datetime(2026, 12, 9, tzinfo=timezone.utc)
    d = select(entries, keep=3, older_than=None, now=now)
    assert sorted(e.name for e in d.remove) == ["n-1", "n-2", "n-3", "n-4"]
    assert "unfinished" in d.keep["n-crashed"] and "in use" in d.keep["n-running"]
    assert sorted(e.name for e in select(entries, None, timedelta(days=5), now).remove) == ["n-1", "n-2", "n-3"]
    both = select(entries, keep=1, older_than=timedelta(days=5), now=now)  # only what both limits remove
    assert sorted(e.name for e in both.remove) == ["n-1", "n-2", "n-3"]
    with pytest.raises(InputError):
        select(entries, None, None)
    assert parse_age("14d") == timedelta(days=14) and parse_age("36h") == timedelta(hours=36)
    for bad in ("14", "0d", "2w", "-1d"):
        with pytest.raises(InputError):
            parse_age(bad)


def test_retention_removes_finished_jobs_only_and_refuses_one_another_run_holds(tmp_path):
    for day in (1, 2, 3, 4):
        _night(tmp_path, day, {"a": 1.0})
    held = tmp_path / "nightly-2026-12-01"
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(held)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              text=True, cwd=Path(__file__).resolve().parents[1])
    try:
        assert holder.stdout.readline().strip() == "held"
        entries = {e.name: e for e in scan(tmp_path, "nightly-*")}
        assert sorted(entries) == [f"nightly-2026-12-0{d}" for d in (1, 2, 3, 4)]
        assert entries[held.name].held_by and "in use by another tbflow run" in remove_job(held).refused
        assert (held / "job.json").is_file()
        res = CliRunner().invoke(app, ["gc", "--jobs-dir", str(tmp_path), "--match", "nightly-*", "--keep-jobs", "1",
                                       "--dry-run"])
        assert "would remove job" in res.output and "nightly-2026-12-02" in res.output, res.output
        assert f"kept job {held}: in use" in res.output and (tmp_path / "nightly-2026-12-02").is_dir()
        assert remove_job(tmp_path / "nightly-2026-12-02").removed_dir and not (tmp_path / "nightly-2026-12-02").exists()
    finally:
        holder.stdin.close()
        holder.wait(timeout=30)
    res = CliRunner().invoke(app, ["gc", "--jobs-dir", "s3://b/p", "--keep-jobs", "1"])
    assert res.exit_code == 2 and "--jobs-dir" in res.output


#: another process that holds a job's lock until its stdin closes
HOLD = """
import sys
from pathlib import Path
from tasks_lib.store.job_lock import JobLock
lock = JobLock.acquire(Path(sys.argv[1]))
print("held", flush=True)
sys.stdin.read()
lock.release()
"""
