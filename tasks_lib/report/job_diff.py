"""Compare two jobs task by task (two harnesses, or before/after a change).

Why paired and per task: a difference of means between two runs mixes the change under test
with which tasks happened to be scored on each side. So the headline compares only tasks scored
on **both** sides, each task weighted once (its mean over scored attempts), with wins, losses and
ties, a t interval on the mean paired difference and an exact sign test. Tasks scored on one side
only (absent on the other, or only invalid there) are listed with the reason, never dropped, and
invalid counts stay beside every task, so an "improvement" that is really the other side's broken
environment is visible. Differences in run conditions (dataset, model, attempts, timeouts,
harness versions) are flagged, because an unequal comparison is the most common way to fool
yourself with a benchmark.
"""

from __future__ import annotations

import math
from typing import Literal

from pydantic import BaseModel, Field

from tasks_lib.errors import InputError
from tasks_lib.report.results_model import Interval, Results, TaskResult
from tasks_lib.report.stats import sign_test, t_interval

TIE = 1e-9
Status = Literal["pass", "fail", "mixed", "invalid", "absent"]
Outcome = Literal["b_better", "a_better", "tie", "a_only", "b_only", "neither"]


class SideTask(BaseModel):
    """One task on one side: counts over its recorded attempts."""

    status: Status
    recorded: int = 0
    scored: int = 0
    invalid: int = 0
    passed: int = 0
    mean_reward: float | None = None


class TaskComparison(BaseModel):
    task: str
    a: SideTask
    b: SideTask
    delta: float | None = Field(description="B mean - A mean; None unless both sides are scored.")
    outcome: Outcome


class PairedSummary(BaseModel):
    tasks: int = Field(description="Tasks scored on both sides.")
    mean_a: float | None = None
    mean_b: float | None = None
    mean_delta: float | None = None
    delta_interval: Interval | None = None
    b_better: int = 0
    a_better: int = 0
    ties: int = 0
    sign_test_p: float | None = None


class ArmDiff(BaseModel):
    harness_a: str
    harness_b: str
    tasks: list[TaskComparison]
    paired: PairedSummary


class ConfigDifference(BaseModel):
    setting: str
    a: str
    b: str
    differs: bool
    under_test: bool = Field(default=False, description="The compared harnesses: a difference is the point.")


class JobDiff(BaseModel):
    job_a: str
    job_b: str
    conditions: list[ConfigDifference]
    arms: list[ArmDiff]


def pair_harnesses(a: Results, b: Results, harness_a: str | None, harness_b: str | None) -> list[tuple[str, str]]:
    """Which harness of A is compared with which of B.

    Explicit flags win; else one harness each side is compared whatever their names; else every
    harness the two jobs share is compared with itself.
    """
    names_a = [s.harness for s in a.summaries]
    names_b = [s.harness for s in b.summaries]
    for flag, name, names in (("--harness-a", harness_a, names_a), ("--harness-b", harness_b, names_b)):
        if name is not None and name not in names:
            raise InputError(flag, f"no harness {name!r} in that job; it has: {', '.join(names) or 'none'}")
    if harness_a or harness_b:
        ha = harness_a or (names_a[0] if len(names_a) == 1 else None)
        hb = harness_b or (names_b[0] if len(names_b) == 1 else None)
        if ha is None or hb is None:
            missing = "--harness-a" if ha is None else "--harness-b"
            raise InputError(missing, "that job has several harnesses; name the one to compare")
        return [(ha, hb)]
    if len(names_a) == 1 and len(names_b) == 1:
        return [(names_a[0], names_b[0])]
    shared = [h for h in names_a if h in names_b]
    if not shared:
        raise InputError("--harness-a/--harness-b", f"the jobs share no harness (A: {', '.join(names_a)}; "
                                                    f"B: {', '.join(names_b)}); name the two to compare")
    return [(h, h) for h in shared]


def diff_jobs(a: Results, b: Results, harness_a: str | None = None, harness_b: str | None = None) -> JobDiff:
    pairs = pair_harnesses(a, b, harness_a, harness_b)
    return JobDiff(job_a=a.job.job_name, job_b=b.job.job_name, conditions=_conditions(a, b, pairs),
                   arms=[_arm(a, b, ha, hb) for ha, hb in pairs])


def _side(row: TaskResult | None) -> SideTask:
    if row is None:
        return SideTask(status="absent")
    recorded = row.scored + row.invalid
    if recorded == 0:
        status: Status = "absent"
    elif row.scored == 0:
        status = "invalid"
    elif row.passed == row.scored:
        status = "pass"
    elif row.passed == 0:
        status = "fail"
    else:
        status = "mixed"
    return SideTask(status=status, recorded=recorded, scored=row.scored, invalid=row.invalid,
                    passed=row.passed, mean_reward=row.mean_reward)


def _arm(a: Results, b: Results, ha: str, hb: str) -> ArmDiff:
    rows_a = {r.task: r for r in a.tasks if r.harness == ha}
    rows_b = {r.task: r for r in b.tasks if r.harness == hb}
    comparisons = []
    for task in sorted(set(rows_a) | set(rows_b)):
        sa, sb = _side(rows_a.get(task)), _side(rows_b.get(task))
        delta = None
        outcome: Outcome
        if sa.scored and sb.scored:
            delta = sb.mean_reward - sa.mean_reward  # type: ignore[operator]
            outcome = "tie" if abs(delta) <= TIE else ("b_better" if delta > 0 else "a_better")
        elif sa.scored:
            outcome = "a_only"
        elif sb.scored:
            outcome = "b_only"
        else:
            outcome = "neither"
        if sa.status == "absent" and sb.status == "absent":
            continue
        comparisons.append(TaskComparison(task=task, a=sa, b=sb, delta=delta, outcome=outcome))
    return ArmDiff(harness_a=ha, harness_b=hb, tasks=comparisons, paired=_paired(comparisons))


def _paired(rows: list[TaskComparison]) -> PairedSummary:
    both = [r for r in rows if r.delta is not None]
    if not both:
        return PairedSummary(tasks=0)
    deltas = [r.delta for r in both if r.delta is not None]
    wins = sum(1 for r in both if r.outcome == "b_better")
    losses = sum(1 for r in both if r.outcome == "a_better")
    ci = t_interval(deltas)
    return PairedSummary(
        tasks=len(both),
        mean_a=math.fsum(r.a.mean_reward or 0.0 for r in both) / len(both),
        mean_b=math.fsum(r.b.mean_reward or 0.0 for r in both) / len(both),
        mean_delta=math.fsum(deltas) / len(deltas),
        delta_interval=Interval(low=ci[0], high=ci[1], method="paired Student t over tasks") if ci else None,
        b_better=wins, a_better=losses, ties=len(both) - wins - losses,
        sign_test_p=sign_test(wins, losses),
    )


def _conditions(a: Results, b: Results, pairs: list[tuple[str, str]]) -> list[ConfigDifference]:
    def versions(r: Results, names: list[str]) -> str:
        got = {h.name: h.version for h in r.job.harnesses}
        return ", ".join(f"{n} {got.get(n) or '?'}" for n in names)

    def secs(values: list[float]) -> str:
        return ", ".join(f"{v:g}s" for v in values) or "n/a"

    rows = [
        ("dataset", a.job.dataset, b.job.dataset),
        ("model", a.job.model or "—", b.job.model or "—"),
        ("harnesses", versions(a, [p[0] for p in pairs]), versions(b, [p[1] for p in pairs])),
        ("attempts", str(a.job.attempts), str(b.job.attempts)),
        ("agent timeouts", secs(a.job.agent_timeouts_sec), secs(b.job.agent_timeouts_sec)),
        ("verifier timeouts", secs(a.job.verifier_timeouts_sec), secs(b.job.verifier_timeouts_sec)),
        ("timeout settings", _kv(a.job.timeout_settings), _kv(b.job.timeout_settings)),
        ("tbflow", a.job.tbflow_version, b.job.tbflow_version),
    ]
    # A difference of harness (the thing usually under test) is expected, not a warning.
    return [ConfigDifference(setting=k, a=va, b=vb, differs=va != vb, under_test=k == "harnesses")
            for k, va, vb in rows]


def _kv(d: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(d.items())) or "none"
