"""The summary lines under a job's results table, one per harness.

Why per harness: a mean over every trial of a job mixes harnesses (``oracle`` 1.0 and ``nop`` 0.0
read as "0.500"), which says nothing about either; the report (tasks_lib/report/results_build.py)
gives each harness its own numbers, and so does the terminal. Pure functions over records, so the
rule is tested without a job.
"""

from __future__ import annotations

from collections import Counter

from tasks_lib.records.record_models import TrialRecord
from tasks_lib.records.trial_cost import cost_text, total_cost, trial_cost


def harness_line(harness: str, records: list[TrialRecord]) -> str:
    """``HARNESS: scored S   invalid I (kind n, ...)   mean reward over scored: M`` for one harness,
    then its flagged trials and, for a model harness, its cost (``trial_cost``); invalid trials are
    counted by kind and never enter the mean."""
    scored = [r.validity.reward or 0.0 for r in records if r.validity.status == "scored"]
    kinds = Counter(r.validity.kind for r in records if r.validity.status == "invalid")
    by_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items())) if kinds else "none"
    mean = f"{sum(scored) / len(scored):.3f}" if scored else "n/a (no scored trials)"
    flagged = sum(1 for r in records if r.flags)
    tail = f"   flagged: {flagged}" if flagged else ""
    if any(r.harness_kind == "model" for r in records):  # as every report shows it
        tail += f"   cost: {cost_text(total_cost(trial_cost(r.agent) for r in records))}"
    return (f"{harness}: scored: {len(scored)}   invalid: {sum(kinds.values())} ({by_kind})   "
            f"mean reward over scored: {mean}{tail}")


def summary_lines(records: list[TrialRecord]) -> list[str]:
    """One ``harness_line`` per harness, in the order the harnesses first appear in ``records``."""
    by_harness: dict[str, list[TrialRecord]] = {}
    for r in records:
        by_harness.setdefault(r.spec.harness, []).append(r)
    return [harness_line(h, rs) for h, rs in by_harness.items()]
