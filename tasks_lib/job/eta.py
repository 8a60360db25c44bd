"""How long a running job has left, and which trials run now: for the progress line and artifact.

Why from the planned expectations: each queued trial already carries an expected duration
(``QueuedTrial.expected_sec``: its median in the trial history, else the task's estimate, else its
agent timeout; ``tasks_lib/job/trial_order.py``). Trials of this job that finished scale those
expectations (the median of actual / expected), so a machine slower than the history catches up.
What is left is list-scheduled over the slots in start order: each running trial holds its slot
for the rest of its expectation, each queued one goes to the slot that frees first. Pure (the
caller passes the clock), so it is tested without a job.
"""

from __future__ import annotations

import heapq
import statistics

from tasks_lib.records.record_models import TrialOrder


def remaining_sec(expected: dict[str, float], queued: list[str], running: dict[str, float], slots: int,
                  scale: float = 1.0) -> float:
    """Seconds until the last trial ends. ``running``: trial id → seconds it has run so far."""
    frees = [max(expected.get(t, 0.0) * scale - ran, 0.0) for t, ran in running.items()]
    frees += [0.0] * max(slots - len(frees), 0)
    heapq.heapify(frees)
    for t in queued:
        heapq.heappush(frees, heapq.heappop(frees) + expected.get(t, 0.0) * scale)
    return max(frees, default=0.0)


def short_duration(sec: float) -> str:
    """``45s``, ``12m``, ``2h 05m``: coarse on purpose (an estimate)."""
    sec = int(round(sec))
    if sec < 60:
        return f"{sec}s"
    if sec < 3600:
        return f"{sec // 60}m {sec % 60:02d}s" if sec < 600 else f"{sec // 60}m"
    return f"{sec // 3600}h {sec % 3600 // 60:02d}m"


class TrialClock:
    """What a progress view tracks to say "ETA" and "running": fed the planned order and each
    start and end, asked with the current (monotonic) time."""

    def __init__(self) -> None:
        self.expected: dict[str, float] = {}
        self.queued: list[str] = []
        self.started_at: dict[str, float] = {}
        self.ratios: list[float] = []
        self.slots = 1  # the most trials seen running at once: the job's concurrency, soon enough

    def planned(self, order: TrialOrder) -> None:
        self.expected = {q.trial_id: q.expected_sec for q in order.trials}
        self.queued = [q.trial_id for q in order.trials]

    def started(self, trial_id: str, now: float) -> None:
        if trial_id in self.queued:
            self.queued.remove(trial_id)
        self.started_at[trial_id] = now
        self.slots = max(self.slots, len(self.started_at))

    def ended(self, trial_id: str, now: float) -> None:
        start = self.started_at.pop(trial_id, None)
        if trial_id in self.queued:
            self.queued.remove(trial_id)
        if start is not None and self.expected.get(trial_id):
            self.ratios.append((now - start) / self.expected[trial_id])

    def running(self) -> list[str]:
        return list(self.started_at)

    def eta_sec(self, now: float) -> float | None:
        """None until something is known to run (a resumed job with nothing left: 0)."""
        if not self.started_at and not self.ratios:
            return None
        scale = statistics.median(self.ratios) if self.ratios else 1.0
        ran = {t: now - s for t, s in self.started_at.items()}
        return remaining_sec(self.expected, self.queued, ran, self.slots, scale)

    def describe(self, now: float, limit: int = 3) -> str:
        """``ETA 4m 10s; running: a.oracle.1, b.codex.1 (+2)``, or "" before anything runs."""
        eta = self.eta_sec(now)
        parts = [f"ETA {short_duration(eta)}"] if eta is not None else []
        run = self.running()
        if run:
            more = f" (+{len(run) - limit})" if len(run) > limit else ""
            parts.append("running: " + ", ".join(run[:limit]) + more)
        return "; ".join(parts)
