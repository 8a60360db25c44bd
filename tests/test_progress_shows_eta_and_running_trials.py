"""Issue 31: progress showed no ETA and not which trials were running. The terminal's progress
line and the job's progress artifact now say both: the ETA from each queued trial's expected
duration (the trial history's median, else the task's estimate), scaled by how this job's finished
trials compared with theirs, list-scheduled over the slots; and the trials running now. The clock
is pure (the caller passes the time); the artifact is read back from a real Prefect server.
"""

from __future__ import annotations

import pytest
from report_fixtures import make_trial
from task_factory import make_task

from tasks_lib.job.eta import TrialClock, remaining_sec, short_duration
from tasks_lib.records.record_models import QueuedTrial, TrialFlag, TrialOrder


def _order(**expected: float) -> TrialOrder:
    return TrialOrder(mode="expected", trials=[QueuedTrial(trial_id=t, expected_sec=s, source="history")
                                               for t, s in expected.items()])


def test_remaining_time_is_list_scheduled_over_the_slots():
    expected = {"a": 100.0, "b": 60.0, "c": 50.0, "d": 10.0}
    # a ran 30 s (70 left), b ran 10 s (50 left); c goes to b's slot (ends at 100), d to a's (80)
    assert remaining_sec(expected, ["c", "d"], {"a": 30.0, "b": 10.0}, slots=2) == 100.0
    assert remaining_sec(expected, ["c", "d"], {"a": 30.0, "b": 10.0}, slots=2, scale=2.0) == pytest.approx(210.0)
    assert remaining_sec(expected, [], {"a": 500.0}, slots=1) == 0.0  # overdue: not negative


def test_the_clock_scales_by_finished_trials_and_names_the_running_ones():
    clock = TrialClock()
    clock.planned(_order(a=100, b=100, c=100))
    assert clock.describe(0.0) == ""  # nothing started: no guess yet
    clock.started("a", 0.0)
    clock.started("b", 0.0)
    assert clock.describe(40.0) == "ETA 2m 40s; running: a, b"  # 60 + 100 (c after a or b)
    clock.ended("a", 50.0)  # took half its expectation: the rest is expected to as well
    clock.started("c", 50.0)
    assert clock.eta_sec(50.0) == pytest.approx(50.0)  # c: 100 * 0.5; b: 100 * 0.5 - 50 = 0
    assert clock.running() == ["b", "c"]


def test_short_durations_read_at_a_glance():
    assert [short_duration(s) for s in (5, 75, 900, 7500)] == ["5s", "1m 15s", "15m", "2h 05m"]


def test_artifact_counts_flagged_and_says_eta_and_running(monkeypatch):
    import flows.job.run_ui as run_ui

    calls: list[str] = []
    monkeypatch.setattr(run_ui, "create_progress_artifact", lambda **kw: calls.append(kw["description"]) or "id")
    monkeypatch.setattr(run_ui, "update_progress_artifact", lambda _id, **kw: calls.append(kw["description"]))
    art = run_ui.ProgressArtifact("k", logger=None)
    art.order_planned(_order(**{"t1.oracle.1": 30.0, "t2.oracle.1": 30.0}))
    art.job_started("/jobs/j", 2, 0)
    art.trial_started("t1.oracle.1")
    art.flush()  # updates go out on the artifact's own thread (flows/job/latest_sender.py)
    assert calls[-1].startswith("0/2 trials done: 0 scored, 0 invalid, 0 flagged; ETA "), calls
    assert calls[-1].endswith("running: t1.oracle.1"), calls
    flagged = make_trial("t1", "oracle")
    flagged.spec.trial_id = "t1.oracle.1"
    flagged.flags = [TrialFlag(kind="tampering", message="x")]
    art.trial_finished(flagged, 1, 2)
    art.flush()
    assert calls[-1].startswith("1/2 trials done: 1 scored, 0 invalid, 1 flagged; ETA "), calls
    art.trial_finished(make_trial("t2", "oracle", invalid="verifier"), 2, 2)
    art.job_finished()
    assert calls[-1] == "2/2 trials done: 1 scored, 1 invalid, 1 flagged"


@pytest.mark.docker
def test_terminal_progress_line_shows_eta_and_the_running_trial(run_job, tmp_path, monkeypatch):
    """The Rich progress line (the CLI's listener) renders the clock while a trial runs."""
    import io

    from rich.console import Console

    from flows.cli import console as console_mod
    from flows.job import progress

    seen: list[str] = []
    listener = console_mod.RichProgress()
    listener._console = Console(file=io.StringIO(), width=200, force_terminal=False)
    original = listener.trial_started

    def started(trial_id: str) -> None:
        original(trial_id)
        seen.append(console_mod.NowColumn(listener.clock).render(None).plain)

    listener.trial_started = started  # type: ignore[method-assign]
    progress.set_listener(listener)
    try:
        make_task(tmp_path / "ds", "one")
        run_job(tmp_path / "ds")
    finally:
        progress.set_listener(None)
    assert len(seen) == 1 and seen[0].startswith("ETA ") and seen[0].endswith("running: one.oracle.1"), seen
