"""The duration history is shared by every job on the machine: two processes writing at once lose
no record and never leave a half-written file; a trial whose agent never ran is not history, and a
trial's own image build is not counted as the task's run time."""

import multiprocessing
from datetime import datetime, timedelta, timezone

from tasks_lib.records.record_models import AgentOutcome, ImageOutcome, TrialRecord, TrialSpec, Validity
from tasks_lib.job.trial_history import expected_from_history, remember

N = 60


def _record(task: str, n: int, duration: float, *, agent=True, image=None) -> TrialRecord:
    ended = datetime(2026, 1, 1, tzinfo=timezone.utc) + timedelta(seconds=n)
    return TrialRecord(
        spec=TrialSpec(job_id=f"job-{task}", trial_id=f"{task}.oracle.{n}", task_name=task, task_path="/x",
                       harness="oracle", attempt=n),
        harness_kind="reference", harness_version="1", started_at=ended - timedelta(seconds=duration),
        ended_at=ended, duration_sec=duration, image=image,
        agent=AgentOutcome(timeout_sec=60, duration_sec=duration) if agent else None,
        validity=Validity(status="scored", reward=1.0))


def _writer(path: str, task: str) -> None:
    from pathlib import Path

    for n in range(1, N + 1):
        remember(_record(task, n, float(n)), Path(path))


def test_two_processes_write_at_once_and_nothing_is_lost(tmp_path):
    path = tmp_path / "cache" / "trial-history.sqlite"
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(str(path), task)) for task in ("left", "right")]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    import sqlite3

    rows = sqlite3.connect(path).execute("SELECT task, COUNT(*) FROM trial_duration GROUP BY task").fetchall()
    assert dict(rows) == {"left": N, "right": N}
    # the estimate is the median of the latest five: N-4 .. N
    assert expected_from_history({("left", "oracle"), ("right", "oracle"), ("other", "oracle")}, path) == {
        ("left", "oracle"): float(N - 2), ("right", "oracle"): float(N - 2)}


def test_failed_before_the_agent_is_skipped_and_own_build_is_left_out(tmp_path):
    path = tmp_path / "h.sqlite"
    remember(_record("never-ran", 1, 5.0, agent=False), path)
    remember(_record("built", 1, 50.0, image=ImageOutcome(tag="x", source="built", duration_sec=40.0)), path)
    remember(_record("ahead", 1, 12.0, image=ImageOutcome(tag="y", source="built", duration_sec=30.0, ahead=True)),
             path)
    got = expected_from_history({("never-ran", "oracle"), ("built", "oracle"), ("ahead", "oracle")}, path)
    assert got == {("built", "oracle"): 10.0, ("ahead", "oracle"): 12.0}


def test_an_unreadable_history_orders_nothing_and_breaks_nothing(tmp_path):
    path = tmp_path / "h.sqlite"
    path.write_bytes(b"not a database at all" * 100)
    remember(_record("t", 1, 3.0), path)  # ignored, no exception
    assert expected_from_history({("t", "oracle")}, path) == {}
