"""Turn a job's records into the ``Results`` document (pure, apart from reading log tails).

The rules that make the numbers trustworthy live here: an invalid trial never enters a mean or a
pass@k (it is counted beside them), a cost sum is known only when every trial's is and is shown as a
lower bound otherwise (``tasks_lib/records/trial_cost.py``), never 0 for unknown, and every planned
trial without a record is listed.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Iterable, Sequence
from pathlib import Path

from tasks_lib.records.record_models import JobRecord, TrialRecord
from tasks_lib.records.trial_cost import total_cost, trial_cost, trial_tokens
from tasks_lib.report.report_inputs import job_relative, load_job, log_tail, trial_dir_rel
from tasks_lib.report.results_model import (
                                            AttemptCell,
                                            HarnessInfo,
                                            HarnessSummary,
                                            Interval,
                                            InvalidCounts,
                                            JobInfo,
                                            PassAtK,
                                            Results,
                                            TaskResult,
                                            TrialResult,
                                            UnreadableRecord,
                                            )
from tasks_lib.report.run_slices import peak_concurrency, run_slices
from tasks_lib.report.stats import mean_interval, mean_pass_at_k


def tbflow_version() -> str:
    """The running tbflow's version (installed metadata, else the source tree's)."""
    try:
        from importlib.metadata import version

        return version("tbflow")
    except Exception:  # not installed: running from a checkout
        try:
            from tasks_lib import __version__

            return __version__
        except ImportError:
            return "unknown"


def load_results(job_dir: Path) -> Results:
    loaded = load_job(Path(job_dir))
    return build_results(loaded.job, loaded.trials, job_dir=loaded.job_dir, unreadable=loaded.unreadable)


def build_results(job_record: JobRecord, trial_records: Iterable[TrialRecord], job_dir: Path | None = None,
                  unreadable: Sequence[tuple[str, str]] = ()) -> Results:
    job_dir = Path(job_dir) if job_dir is not None else None
    config = dict(job_record.config or {})
    records = list(trial_records)
    harnesses = _harness_order(config, job_record, records)
    rank = {h: i for i, h in enumerate(harnesses)}
    records.sort(key=lambda r: (rank[r.spec.harness], r.spec.task_name, r.spec.attempt, r.trial_id))
    attempts_cfg = config.get("attempts") if isinstance(config.get("attempts"), int) else None
    attempt_numbers = _attempt_numbers(records, attempts_cfg)

    trials = [_trial_result(r, job_dir) for r in records]
    by_harness: dict[str, list[TrialResult]] = defaultdict(list)
    for t in trials:
        by_harness[t.record.spec.harness].append(t)
    all_tasks = sorted({r.spec.task_name for r in records})
    per_cell: defaultdict[tuple[str, str], int] = defaultdict(int)
    for r in records:
        per_cell[(r.spec.harness, r.spec.task_name)] += 1
    k_max = attempts_cfg or max(per_cell.values(), default=1)
    ks = [1, k_max] if k_max > 1 else []

    summaries = [_summary(h, by_harness.get(h, []), job_record, ks) for h in harnesses]
    tasks = [row for h in harnesses for row in _task_rows(h, by_harness.get(h, []), all_tasks, attempt_numbers)]
    recorded = {r.trial_id for r in records}
    return Results(
        generated_by=tbflow_version(),
        job=_job_info(job_record, config, records, summaries),
        attempt_numbers=attempt_numbers,
        summaries=summaries,
        trials=trials,
        tasks=tasks,
        task_problems=list(job_record.task_problems),
        task_notes=list(job_record.task_notes),
        missing_trial_ids=[t for t in job_record.trial_ids if t not in recorded],
        unreadable_records=[UnreadableRecord(path=p, message=m) for p, m in unreadable],
    )


def _harness_order(config: dict, job: JobRecord, records: list[TrialRecord]) -> list[str]:
    """The job's harness keys in config order. A plug-in named by an import path is keyed by its
    class's name, so a config entry that is no key (``file.py:Class``) is left out."""
    keys = {*job.harness_versions, *(r.spec.harness for r in records)}
    order: list[str] = []
    for h in [*(config.get("harnesses") or []), *job.harness_versions, *(r.spec.harness for r in records)]:
        if isinstance(h, str) and h not in order and (h in keys or ":" not in h):
            order.append(h)
    return order


def _attempt_numbers(records: list[TrialRecord], attempts_cfg: int | None) -> list[int]:
    """Observed attempt numbers plus the configured range (0- or 1-based, as the records are)."""
    seen = {r.spec.attempt for r in records}
    base = 0 if 0 in seen else 1
    if attempts_cfg:
        seen.update(range(base, base + attempts_cfg))
    return sorted(seen)


def _trial_result(r: TrialRecord, job_dir: Path | None) -> TrialResult:
    v = r.validity
    verifier_log = job_relative(job_dir, r.trial_id, r.verifier.stdout_log) if r.verifier else None
    evidence = job_relative(job_dir, r.trial_id, v.evidence) if v.status != "scored" else None
    not_passed = v.status != "scored" or (v.reward is not None and v.reward < 1)
    return TrialResult(
        record=r,
        trial_dir=trial_dir_rel(r.trial_id),
        evidence_path=evidence,
        verifier_log=verifier_log,
        verifier_tail=log_tail(job_dir, verifier_log) if not_passed else [],
        evidence_tail=log_tail(job_dir, evidence) if evidence else [],
        cost=trial_cost(r.agent),
        input_tokens=trial_tokens(r.agent)[0],
        output_tokens=trial_tokens(r.agent)[1],
    )


def _summary(harness: str, trials: list[TrialResult], job: JobRecord, ks: list[int]) -> HarnessSummary:
    scored = [t for t in trials if t.scored]
    invalid = [t for t in trials if t.record.validity.status == "invalid"]
    errors = sum(1 for t in trials if t.record.validity.status == "error")
    kinds = InvalidCounts()
    for t in invalid:
        kind = t.record.validity.kind or "unknown"
        setattr(kinds, kind, getattr(kinds, kind) + 1)
    rewards = [float(t.reward) for t in scored]  # type: ignore[arg-type]
    est = mean_interval(rewards, [t.record.spec.task_name for t in scored])
    interval = (Interval(low=est.low, high=est.high, method=est.method)
                if est and est.low is not None and est.high is not None else None)
    per_task: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for t in scored:
        cell = per_task[t.record.spec.task_name]
        cell[0] += 1
        cell[1] += int(t.reward >= 1)  # type: ignore[operator]
    pass_k = []
    for k in ks:
        value, used, short = mean_pass_at_k([(n, c) for n, c in per_task.values()], k)
        pass_k.append(PassAtK(k=k, value=value, tasks=used, tasks_short=short))
    usages = [t.record.agent.usage for t in trials if t.record.agent and t.record.agent.usage]
    cost = total_cost(t.cost for t in trials)
    known = [t.cost.usd for t in trials if t.cost.usd is not None]
    harness_kind = trials[0].record.harness_kind if trials else None
    return HarnessSummary(
        harness=harness,
        harness_version=job.harness_versions.get(harness) or (trials[0].record.harness_version if trials else None),
        harness_kind=harness_kind,
        trials=len(trials),
        scored=len(scored),
        invalid=len(invalid),
        errors=errors,
        flagged=sum(1 for t in trials if t.record.flags),
        invalid_by_kind=kinds,
        passed=sum(1 for r in rewards if r >= 1),
        failed=sum(1 for r in rewards if r < 1),
        mean_reward=est.mean if est else None,
        reward_interval=interval,
        pass_at_k=pass_k,
        tasks=len({t.record.spec.task_name for t in trials}),
        tasks_scored=len(per_task),
        input_tokens=sum(u.input_tokens for u in usages) if usages else None,
        output_tokens=sum(u.output_tokens for u in usages) if usages else None,
        usage_trials=len(usages),
        cost_usd=math.fsum(known) if known else None,
        cost_trials=len(known),
        cost=cost,
        duration_sec=math.fsum(t.record.duration_sec for t in trials),
    )


def _task_rows(harness: str, trials: list[TrialResult], all_tasks: list[str],
               attempt_numbers: list[int]) -> list[TaskResult]:
    by_task: dict[str, dict[int, TrialResult]] = defaultdict(dict)
    for t in trials:
        by_task[t.record.spec.task_name][t.record.spec.attempt] = t
    rows = []
    for task in all_tasks:
        got = by_task.get(task, {})
        cells = []
        for a in attempt_numbers:
            found = got.get(a)
            if found is None:
                cells.append(AttemptCell(attempt=a, status="missing"))
            else:
                v = found.record.validity
                cells.append(AttemptCell(attempt=a, status=v.status, trial_id=found.record.trial_id,
                                         reward=v.reward if v.status == "scored" else None,
                                         kind=v.kind if v.status == "invalid" else None))
        rewards = [c.reward for c in cells if c.status == "scored" and c.reward is not None]
        rows.append(TaskResult(
            harness=harness, task=task, attempts=cells, scored=len(rewards),
            invalid=sum(1 for c in cells if c.status == "invalid"),
            passed=sum(1 for r in rewards if r >= 1),
            mean_reward=math.fsum(rewards) / len(rewards) if rewards else None,
        ))
    return rows


def _job_info(job: JobRecord, config: dict, records: list[TrialRecord],
              summaries: list[HarnessSummary]) -> JobInfo:
    def _int(key: str) -> int | None:
        v = config.get(key)
        return v if isinstance(v, int) and not isinstance(v, bool) else None

    return JobInfo(
        job_id=job.job_id,
        job_name=job.job_name,
        dataset=job.dataset,
        location=job.location,
        model=config.get("model") or next((r.spec.model for r in records if r.spec.model), None),
        harnesses=[HarnessInfo(name=s.harness, version=s.harness_version, kind=s.harness_kind) for s in summaries],
        attempts=_int("attempts"),
        concurrency=_int("concurrency"),
        peak_concurrency=peak_concurrency((r.started_at, r.ended_at) for r in records) if records else None,
        runs=run_slices(records),
        agent_timeouts_sec=sorted({r.agent.timeout_sec for r in records if r.agent}),
        verifier_timeouts_sec=sorted({r.verifier.timeout_sec for r in records if r.verifier}),
        timeout_settings={k: v for k, v in config.items() if "timeout" in k or "multiplier" in k},
        started_at=job.started_at,
        ended_at=job.ended_at,
        tbflow_version=job.tbflow_version,
        config=config,
    )
