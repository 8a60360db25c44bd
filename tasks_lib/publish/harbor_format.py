"""The part of Harbor 0.26's job-directory format that ``tbflow export --format harbor`` writes.

Why mirror Harbor's models instead of importing them: Harbor needs Python >= 3.12 and pulls in
its whole runner; tbflow runs on 3.11. These models carry exactly Harbor's field names (from
``harbor/models/trial/result.py``, ``job/result.py``, ``job/config.py`` of the 0.26.0 wheel) for
the fields tbflow fills; every other Harbor field keeps its default when Harbor loads the file.
``scripts/harbor-check.sh`` loads an export with Harbor's own models, and a test runs it, so a
drift between these mirrors and Harbor shows up as a failing test, not as a rejected submission.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field


class TimingInfo(BaseModel):
    started_at: datetime | None = None
    finished_at: datetime | None = None


class ErrorPolicyOverride(BaseModel):
    """Harbor's per-exception policy; tbflow's invalid trials never carry a valid reward."""

    should_retry: bool | None = None
    should_grade: bool | None = None
    has_valid_reward: bool | None = None


class ExceptionInfo(BaseModel):
    """How Harbor marks a trial that did not measure the agent: it stays out of the mean."""

    exception_type: str
    exception_message: str
    exception_traceback: str
    occurred_at: datetime
    policy_override: ErrorPolicyOverride | None = None


class ModelInfo(BaseModel):
    name: str
    provider: str | None = None


class AgentInfo(BaseModel):
    name: str
    version: str
    model_info: ModelInfo | None = None


class AgentContext(BaseModel):
    """Harbor's ``agent_result``; ``metadata`` is kept by Harbor as given (tbflow's flags go there)."""

    n_input_tokens: int | None = None
    n_cache_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None
    metadata: dict[str, Any] | None = None


class VerifierResult(BaseModel):
    rewards: dict[str, float | int] | None = None


class TaskConfig(BaseModel):
    path: str
    source: str | None = None


class AgentConfig(BaseModel):
    name: str | None = None
    model_name: str | None = None


class TrialConfig(BaseModel):
    task: TaskConfig
    trial_name: str
    trials_dir: str
    timeout_multiplier: float = 1.0
    agent: AgentConfig
    job_id: str | None = None


class TrialResult(BaseModel):
    """``<job>/<trial>/result.json``."""

    schema_version: int = 1
    id: str
    task_name: str
    trial_name: str
    trial_uri: str
    task_id: dict[str, str] = Field(description="Harbor's LocalTaskId: {'path': ...}.")
    source: str | None = None
    task_checksum: str
    config: TrialConfig
    agent_info: AgentInfo
    agent_result: AgentContext | None = None
    verifier_result: VerifierResult | None = None
    exception_info: ExceptionInfo | None = None
    started_at: datetime | None = None
    finished_at: datetime | None = None
    environment_setup: TimingInfo | None = None
    agent_setup: TimingInfo | None = None
    agent_execution: TimingInfo | None = None
    verifier: TimingInfo | None = None


class DatasetConfig(BaseModel):
    name: str | None = None
    version: str | None = None
    path: str | None = None


class JobConfig(BaseModel):
    """``<job>/config.json``: the run conditions the leaderboard's bot checks."""

    schema_version: int = 1
    job_name: str
    jobs_dir: str
    n_attempts: int
    timeout_multiplier: float
    n_concurrent_trials: int
    agents: list[AgentConfig]
    datasets: list[DatasetConfig]


class AgentDatasetStats(BaseModel):
    n_trials: int = 0
    n_errors: int = 0
    reward_stats: dict[str, dict[str, list[str]]] = Field(default_factory=dict)
    exception_stats: dict[str, list[str]] = Field(default_factory=dict)


class JobStats(BaseModel):
    n_completed_trials: int = 0
    n_errored_trials: int = 0
    evals: dict[str, AgentDatasetStats] = Field(default_factory=dict)
    n_input_tokens: int | None = None
    n_output_tokens: int | None = None
    cost_usd: float | None = None


class JobResult(BaseModel):
    """``<job>/result.json``."""

    schema_version: int = 1
    id: str
    started_at: datetime
    finished_at: datetime | None = None
    n_total_trials: int
    stats: JobStats
