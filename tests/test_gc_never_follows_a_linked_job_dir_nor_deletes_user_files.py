"""``tbflow gc --keep-jobs/--older-than`` as a mistaken user meets it: an archive of old jobs linked
into the jobs dir (``jobs/nightly-archive -> /elsewhere``) was emptied through the link, and a notes
file the user kept inside a job directory was deleted with it. Deletion touches only what tbflow
wrote, inside the jobs dir it was given; links are never followed."""

from datetime import datetime, timedelta, timezone
from pathlib import Path

from typer.testing import CliRunner

from flows.cli.main import app
from report_fixtures import make_job, make_trial, write_job_dir
from tasks_lib.store.job_dir_removal import written_by_tbflow
from tasks_lib.store.job_lock import LOCK_NAME


def _finished_job(root: Path, name: str, day: int) -> Path:
    trials = [make_trial("hello", "oracle", reward=1.0, job_id=name)]
    job = make_job(trials, job_id=name, name=name)
    job.started_at = datetime(2026, 11, day, 3, tzinfo=timezone.utc)
    job.ended_at = job.started_at + timedelta(hours=1)
    return write_job_dir(root, job, trials)


def _gc(jobs: Path, *extra: str):
    res = CliRunner().invoke(app, ["gc", "--jobs-dir", str(jobs), "--match", "nightly-*", "--keep-jobs", "0", *extra])
    assert res.exit_code == 0, res.output
    return res.output


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_archive_linked_into_the_jobs_dir_is_not_emptied(tmp_path):
    jobs, archive = tmp_path / "jobs", tmp_path / "archive"
    jobs.mkdir()
    old = _finished_job(archive, "nightly-2026-11-01", 1)  # a real finished job, but outside jobs/
    before = _tree(archive)
    (jobs / "nightly-archive").symlink_to(old, target_is_directory=True)
    _finished_job(jobs, "nightly-2026-11-02", 2)

    dry = _gc(jobs, "--dry-run")
    assert "nightly-archive: a symbolic link" in dry and "not followed" in dry, dry
    out = _gc(jobs)
    assert "removed job" in out and "nightly-2026-11-02" in out, out
    assert "nightly-archive: a symbolic link" in out, out
    assert _tree(archive) == before, "the archive behind the link was touched"
    assert (jobs / "nightly-archive").is_symlink(), "the link itself is the user's: left alone"
    assert not (jobs / "nightly-2026-11-02").exists()


def test_links_inside_a_job_dir_are_removed_as_links_not_followed(tmp_path):
    jobs, elsewhere = tmp_path / "jobs", tmp_path / "elsewhere"
    jobs.mkdir()
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("mine")
    job = _finished_job(jobs, "nightly-2026-11-03", 3)
    (job / "gateway").symlink_to(elsewhere, target_is_directory=True)  # a name tbflow writes, as a link
    (agent_logs,) = job.glob("trials/*/agent")
    (agent_logs / "out").symlink_to(elsewhere, target_is_directory=True)  # a link the agent left in its logs

    out = _gc(jobs)
    assert "removed as links" in out and "gateway" in out, out
    assert (elsewhere / "keep.txt").read_text() == "mine"
    assert not job.exists()


def test_notes_file_inside_a_job_dir_is_kept_and_reported(tmp_path):
    jobs = tmp_path / "jobs"
    jobs.mkdir()
    job = _finished_job(jobs, "nightly-2026-11-04", 4)
    (job / "NOTES.md").write_text("why night 4 failed: see the flaky proxy")
    (job / "my-analysis").mkdir()
    (job / "my-analysis" / "plot.png").write_bytes(b"\x89PNG")

    dry = _gc(jobs, "--dry-run")
    assert "NOTES.md" in dry and "my-analysis" in dry and (job / "job.json").is_file(), dry
    out = _gc(jobs)
    assert "not written by tbflow" in out and "NOTES.md, my-analysis" in out, out
    assert (job / "NOTES.md").read_text() == "why night 4 failed: see the flaky proxy"
    assert (job / "my-analysis" / "plot.png").read_bytes() == b"\x89PNG"
    left = sorted(p.name for p in job.iterdir())
    assert left == ["NOTES.md", "my-analysis"], f"tbflow's own files stay behind: {left}"


def test_only_tbflows_own_top_level_names_count_as_its_writing():
    for name in ("job.json", "trials", "attempts", "results.json", "report.md", "junit.xml", "gateway", ".builds",
                 ".retries", LOCK_NAME, f"{LOCK_NAME}.break-abc", ".job.json.k2j_x9"):
        assert written_by_tbflow(name), name
    for name in ("NOTES.md", "job.json.bak", ".job.json", "trials-old", "archive", ".git"):
        assert not written_by_tbflow(name), name
