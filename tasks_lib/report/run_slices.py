"""Where and how a job really ran: one row per machine and flow run (the job's own run, or each
shard's), and how many trials really ran at once.

The configured ``concurrency`` is a cap per run; what a reader comparing jobs needs is what
happened: a job of 12 trials over two shards of concurrency 2 ran up to 4 at once, and a job
whose trials waited on a slow build ran fewer. Both come from the records alone (``ran_on``,
``started_at``/``ended_at``), so a report of a job recorded on many machines needs nothing else.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime

from tasks_lib.records.record_models import TrialRecord
from tasks_lib.report.results_model import RunSlice


def peak_concurrency(spans: Iterable[tuple[datetime, datetime]]) -> int:
    """The most spans open at one instant; a span ending when another starts does not overlap it."""
    spans = list(spans)
    events = sorted([(start, 1) for start, _ in spans] + [(end, -1) for _, end in spans],
                    key=lambda e: (e[0], e[1]))  # at one instant ends (-1) come before starts (+1)
    peak = now = 0
    for _, step in events:
        now += step
        peak = max(peak, now)
    return peak


def run_slices(records: list[TrialRecord]) -> list[RunSlice]:
    """One slice per (host, flow run) that recorded trials, in the order they started."""
    groups: dict[tuple[str, str | None], list[TrialRecord]] = {}
    for r in records:
        if r.ran_on is not None:
            groups.setdefault((r.ran_on.host, r.ran_on.flow_run_id), []).append(r)
    slices = []
    for (host, run_id), rs in groups.items():
        first = rs[0].ran_on
        assert first is not None
        slices.append(RunSlice(
            host=host, flow_run_id=run_id, flow_run_name=first.flow_run_name, flow_name=first.flow_name,
            trials=len(rs), started_at=min(r.started_at for r in rs), ended_at=max(r.ended_at for r in rs),
            peak_concurrency=peak_concurrency((r.started_at, r.ended_at) for r in rs)))
    return sorted(slices, key=lambda s: (s.started_at, s.host, s.flow_run_id or ""))
