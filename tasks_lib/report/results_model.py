"""``results.json``: one versioned document per job from which every report is rendered.

Why a separate document when the records already exist: the Markdown report, the JUnit file,
the Prefect artifacts and ``tbflow diff`` must agree with each other, so they are all rendered
from this one model, and tools outside tbflow get a stable, documented schema
(``docs/results.schema.json``) instead of walking trial directories. It embeds every trial's full
``TrialRecord`` unchanged, plus what the records alone do not say: paths made relative to the job
directory, the last lines of the verifier output and of the evidence log, and the per-harness
summary with its statistics.

Bump ``RESULTS_SCHEMA_VERSION`` on any incompatible change (a removed or renamed field, a changed
meaning); adding an optional field is compatible. Regenerate the committed schema with
``python -m tasks_lib.report.results_model > docs/results.schema.json``.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from tasks_lib.records.record_models import HarnessKind, InvalidKind, TaskProblemRecord, TrialRecord
from tasks_lib.records.trial_cost import TrialCost

RESULTS_SCHEMA_VERSION = 1


class Interval(BaseModel):
    """A confidence interval and how it was computed (see ``tasks_lib.report.stats``)."""

    low: float
    high: float
    confidence: float = 0.95
    method: str = Field(description="e.g. 'Wilson score' or 'Student t, clustered by task'.")


class PassAtK(BaseModel):
    """Unbiased pass@k over tasks with at least k scored attempts."""

    k: int
    value: float | None = Field(description="None when no task has k scored attempts.")
    tasks: int = Field(description="Tasks the estimate averages over.")
    tasks_short: int = Field(description="Tasks left out: fewer than k scored attempts.")


class InvalidCounts(BaseModel):
    """Invalid trials by kind."""

    harness: int = 0
    environment: int = 0
    verifier: int = 0
    interrupted: int = 0
    unknown: int = Field(default=0, description="Invalid records without a kind (not expected).")


class HarnessInfo(BaseModel):
    name: str
    version: str | None = None
    kind: HarnessKind | None = Field(default=None, description="None when no trial of it was recorded.")


class RunSlice(BaseModel):
    """The trials one machine ran in one flow run (the job's run, or a shard), from their records."""

    host: str
    flow_run_id: str | None = None
    flow_run_name: str | None = None
    flow_name: str | None = Field(default=None, description="tbflow-job, or tbflow-trials for a shard.")
    trials: int
    started_at: datetime
    ended_at: datetime
    peak_concurrency: int = Field(description="The most of these trials running at one instant.")


class JobInfo(BaseModel):
    """The job's identity and run conditions, from ``job.json`` and the trial records."""

    job_id: str
    job_name: str
    dataset: str
    location: str | None = Field(default=None, description="Where the job directory is: host:/absolute/path.")
    model: str | None = None
    harnesses: list[HarnessInfo]
    attempts: int | None = Field(default=None, description="Configured attempts per task and harness.")
    concurrency: int | None = None
    peak_concurrency: int | None = Field(default=None, description=(
        "The most trials of the job running at one instant, over every machine (None: no trial recorded)."))
    runs: list[RunSlice] = Field(default_factory=list, description=(
        "Where the trials ran: one entry per machine and flow run (the job's run or a shard)."))
    agent_timeouts_sec: list[float] = Field(default_factory=list,
                                            description="Distinct agent timeouts applied (from the records).")
    verifier_timeouts_sec: list[float] = Field(default_factory=list,
                                               description="Distinct verifier timeouts applied (from the records).")
    timeout_settings: dict[str, Any] = Field(default_factory=dict,
                                             description="Config keys about timeouts or multipliers, as given.")
    started_at: datetime
    ended_at: datetime | None = None
    tbflow_version: str
    config: dict[str, Any] = Field(default_factory=dict, description="The job's full config.")


class HarnessSummary(BaseModel):
    """One harness's results. Means and pass@k are over scored trials only."""

    harness: str
    harness_version: str | None = None
    harness_kind: HarnessKind | None = None
    trials: int = Field(description="Recorded trials: scored + invalid + errors.")
    scored: int
    invalid: int
    errors: int = Field(default=0, description="Trials ended by a tbflow bug (status 'error'); re-run on resume.")
    flagged: int = Field(default=0, description="Trials with a flag (tampering, a broken container).")
    invalid_by_kind: InvalidCounts
    passed: int = Field(description="Scored trials with reward >= 1.")
    failed: int = Field(description="Scored trials with reward < 1.")
    mean_reward: float | None = Field(description="Mean over scored trials; None when none was scored.")
    reward_interval: Interval | None = None
    pass_at_k: list[PassAtK] = Field(default_factory=list)
    tasks: int = Field(description="Tasks with at least one recorded trial.")
    tasks_scored: int = Field(description="Tasks with at least one scored trial.")
    input_tokens: int | None = Field(default=None, description="None when no trial reported usage.")
    output_tokens: int | None = None
    usage_trials: int = Field(default=0, description="Trials whose harness reported usage.")
    cost_usd: float | None = Field(default=None, description=(
        "Sum of the known trial costs (tasks_lib/records/trial_cost.py): each from the price table over the "
        "gateway's token counts, else the CLI's own figure; None when no trial's cost is known, never a made-up 0. "
        "What the reports show is cost."))
    cost_trials: int = Field(default=0, description="Trials whose cost is known (the sum covers only these).")
    cost: TrialCost = Field(default_factory=TrialCost, description=(
        "The sum as every report shows it: known (usd) or partial (at_least_usd, calls_unpriced, trials_unknown)."))
    duration_sec: float = Field(default=0.0, description="Sum of trial durations.")


class TrialResult(BaseModel):
    """One trial's full record plus paths and log tails resolved for reporting."""

    record: TrialRecord
    trial_dir: str = Field(description="Relative to the job directory.")
    evidence_path: str | None = Field(default=None, description="Invalid trials: the proving log, job-relative.")
    verifier_log: str | None = Field(default=None, description="Verifier output, job-relative.")
    verifier_tail: list[str] = Field(default_factory=list,
                                     description="Last lines of the verifier output; empty for passed trials.")
    evidence_tail: list[str] = Field(default_factory=list,
                                     description="Invalid trials: last lines of the evidence log.")
    cost: TrialCost = Field(default_factory=TrialCost, description=(
        "The trial's cost as every report shows it (tasks_lib/records/trial_cost.py)."))
    input_tokens: int | None = Field(default=None, description=(
        "The trial's input tokens: the gateway's count when it saw usage, else the CLI's; None when unknown."))
    output_tokens: int | None = None

    @property
    def scored(self) -> bool:
        return self.record.validity.status == "scored"

    @property
    def reward(self) -> float | None:
        return self.record.validity.reward if self.scored else None


class AttemptCell(BaseModel):
    attempt: int
    status: Literal["scored", "invalid", "error", "missing"]
    trial_id: str | None = None
    reward: float | None = None
    kind: InvalidKind | None = None


class TaskResult(BaseModel):
    """One task under one harness: every attempt, and the task's own mean over scored attempts."""

    harness: str
    task: str
    attempts: list[AttemptCell]
    scored: int
    invalid: int
    passed: int
    mean_reward: float | None = None


class UnreadableRecord(BaseModel):
    path: str
    message: str


class Results(BaseModel):
    """Everything a report shows, for one job."""

    schema_version: int = RESULTS_SCHEMA_VERSION
    generated_by: str = Field(description="tbflow version that rendered this document.")
    job: JobInfo
    attempt_numbers: list[int] = Field(description="Attempt columns of the per-task tables.")
    summaries: list[HarnessSummary]
    trials: list[TrialResult] = Field(description="Every recorded trial, by harness, task, attempt.")
    tasks: list[TaskResult]
    task_problems: list[TaskProblemRecord] = Field(default_factory=list,
                                                   description="Tasks that could not be loaded; never run.")
    task_notes: list[TaskProblemRecord] = Field(
        default_factory=list, description="Keys of a run task's task.toml that no schema knows; ignored.")
    missing_trial_ids: list[str] = Field(default_factory=list,
                                         description="Planned trials without a record (interrupted or not run).")
    unreadable_records: list[UnreadableRecord] = Field(default_factory=list)

    @property
    def total_trials(self) -> int:
        return sum(s.trials for s in self.summaries)

    @property
    def total_invalid(self) -> int:
        return sum(s.invalid for s in self.summaries)

    @property
    def total_errors(self) -> int:
        return sum(s.errors for s in self.summaries)

    @property
    def total_scored(self) -> int:
        return sum(s.scored for s in self.summaries)


def results_schema() -> dict[str, Any]:
    """The JSON Schema of ``results.json``, as committed under ``docs/``."""
    schema = Results.model_json_schema()
    schema["title"] = f"tbflow results.json (schema_version {RESULTS_SCHEMA_VERSION})"
    return schema


def schema_text() -> str:
    return json.dumps(results_schema(), indent=2, sort_keys=True) + "\n"


if __name__ == "__main__":
    print(schema_text(), end="")
