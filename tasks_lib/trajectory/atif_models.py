"""The ATIF trajectory (Agent Trajectory Interchange Format) as tbflow writes it.

Why our own models: Harbor (which defines the format) needs Python >= 3.12 and brings a large
dependency tree; tbflow only writes the subset below. The field names, required fields and rules
follow Harbor 0.26's ``harbor.models.trajectories`` (schema ``ATIF-v1.0`` … ``ATIF-v1.8``): extra
keys are forbidden, step ids run 1, 2, 3 …, only ``agent`` steps carry model fields, and an
observation's ``source_call_id`` names a tool call of its own step. Written files are checked
against Harbor's own models by ``scripts/harbor-validate.sh`` (tests).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, model_validator

#: llm_call_count (one model call per agent step) arrived in ATIF-v1.7
SCHEMA_VERSION = "ATIF-v1.7"


class _Atif(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ToolCall(_Atif):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class ObservationResult(_Atif):
    source_call_id: str | None = None
    content: str | None = None
    extra: dict[str, Any] | None = None


class Observation(_Atif):
    results: list[ObservationResult]


class Metrics(_Atif):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] | None = None


class Step(_Atif):
    step_id: int
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    model_name: str | None = None
    message: str
    reasoning_content: str | None = None
    tool_calls: list[ToolCall] | None = None
    observation: Observation | None = None
    metrics: Metrics | None = None
    llm_call_count: int | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _agent_fields_on_agent_steps(self) -> "Step":
        if self.source != "agent":
            for name in ("model_name", "reasoning_content", "tool_calls", "metrics", "llm_call_count"):
                if getattr(self, name) is not None:
                    raise ValueError(f"step {self.step_id}: {name} is only allowed on agent steps")
        return self


class Agent(_Atif):
    name: str
    version: str
    model_name: str | None = None
    tool_definitions: list[dict[str, Any]] | None = None
    extra: dict[str, Any] | None = None


class FinalMetrics(_Atif):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_cost_usd: float | None = None
    total_steps: int | None = None
    extra: dict[str, Any] | None = None


class Trajectory(_Atif):
    schema_version: str = SCHEMA_VERSION
    session_id: str | None = None
    agent: Agent
    steps: list[Step]
    notes: str | None = None
    final_metrics: FinalMetrics | None = None
    extra: dict[str, Any] | None = None

    @model_validator(mode="after")
    def _format_rules(self) -> "Trajectory":
        if not self.steps:
            raise ValueError("a trajectory needs at least one step")
        for i, step in enumerate(self.steps, 1):
            if step.step_id != i:
                raise ValueError(f"steps[{i - 1}].step_id is {step.step_id}, expected {i}")
            ids = {c.tool_call_id for c in step.tool_calls or []}
            for result in step.observation.results if step.observation else []:
                if result.source_call_id is not None and result.source_call_id not in ids:
                    raise ValueError(f"step {i}: observation of unknown tool call {result.source_call_id!r}")
        return self
