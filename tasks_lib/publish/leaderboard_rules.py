"""Which of the Terminal-Bench leaderboard's rules a job breaks (pure).

The leaderboard's bot (research: trajectories-and-leaderboard.md) refuses a submission whose
``timeout_multiplier`` is not 1, that overrides agent/verifier timeouts or cpu/memory/storage, or
has fewer than 5 trials of a task, and its integrity policy wants an ATIF trajectory for every
passing trial. ``tbflow export`` still writes the export (it is also how a job is browsed in
Harbor's viewer) and prints each broken rule, so nobody learns it from a rejected pull request.
Invalid trials do not count as attempts: the leaderboard counts trials with a valid result.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

from pydantic import BaseModel

from tasks_lib.records.record_models import JobRecord, TrialRecord

MIN_ATTEMPTS = 5
#: job-config keys that would override a task's resources or timeouts (none exist in tbflow today;
#: a config from a future or patched tbflow that has one is reported, not trusted)
_OVERRIDE_WORDS = ("cpu", "memory", "storage", "gpu", "override")


class RuleBreak(BaseModel):
    rule: str
    detail: str


def _short_tasks(records: Sequence[TrialRecord]) -> list[RuleBreak]:
    per_cell = Counter((r.spec.harness, r.spec.task_name) for r in records if r.validity.status == "scored")
    cells = {(r.spec.harness, r.spec.task_name) for r in records}
    short = sorted(c for c in cells if per_cell[c] < MIN_ATTEMPTS)
    if not short:
        return []
    names = ", ".join(f"{t} ({h}: {per_cell[(h, t)]})" for h, t in short[:5])
    more = f" and {len(short) - 5} more" if len(short) > 5 else ""
    return [RuleBreak(rule=f"at least {MIN_ATTEMPTS} scored trials per task",
                      detail=f"{len(short)} task(s) have fewer: {names}{more}")]


def _overrides(config: dict) -> Iterable[RuleBreak]:
    multiplier = config.get("timeout_multiplier", 1.0)
    if multiplier not in (None, 1, 1.0):
        yield RuleBreak(rule="timeout_multiplier 1", detail=f"the job ran with timeout_multiplier {multiplier}")
    keys = sorted(k for k in config if any(w in k.lower() for w in _OVERRIDE_WORDS) and config[k] not in (None, {}, []))
    if keys:
        yield RuleBreak(rule="no resource or timeout overrides", detail="the job config sets " + ", ".join(keys))


def _missing_trajectories(records: Sequence[TrialRecord], with_trajectory: set[str]) -> Iterable[RuleBreak]:
    passing = [r.trial_id for r in records if r.validity.status == "scored" and (r.validity.reward or 0) >= 1
               and r.harness_kind == "model"]
    missing = [t for t in passing if t not in with_trajectory]
    if missing:
        yield RuleBreak(rule="an ATIF trajectory for every passing trial",
                        detail=f"{len(missing)} of {len(passing)} passing trial(s) have none, e.g. {missing[0]}")


def rule_breaks(job: JobRecord, records: Sequence[TrialRecord], with_trajectory: set[str]) -> list[RuleBreak]:
    """Every leaderboard rule ``job`` breaks; empty when it could be submitted as it is.

    Reference harnesses (oracle, nop) measure the tasks, not an agent: a job of them breaks the
    trajectory rule trivially, so only model harnesses' passing trials are asked for one.
    """
    return [*_overrides(job.config or {}), *_short_tasks(records),
            *_missing_trajectories(records, with_trajectory)]
