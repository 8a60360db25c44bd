"""tbflow records -> Harbor's job-directory documents (pure: no file is read or written here).

The rule that matters: **an invalid trial is exported as an exception, never as reward 0.** Harbor
keeps a trial with ``exception_info`` and no ``verifier_result.rewards`` out of its mean
(``reward_valid`` is false), which is what tbflow's "invalid" means; the exception's message is
tbflow's reason and its ``policy_override`` says outright that no reward is valid. Flags (the
judge's findings, e.g. ``tampering``) travel in ``agent_result.metadata["tbflow"]``, a field
Harbor keeps as given, with the verdict and the evidence paths.

Ids are uuid5 of the job and trial ids, so exporting the same job twice gives identical bytes.
"""

from __future__ import annotations

import hashlib
import json
import math
import uuid
from datetime import timedelta
from collections.abc import Sequence
from typing import Any

from tasks_lib.publish.harbor_format import (
                                             AgentConfig,
                                             AgentContext,
                                             AgentDatasetStats,
                                             AgentInfo,
                                             DatasetConfig,
                                             ErrorPolicyOverride,
                                             ExceptionInfo,
                                             JobConfig,
                                             JobResult,
                                             JobStats,
                                             ModelInfo,
                                             TaskConfig,
                                             TimingInfo,
                                             TrialConfig,
                                             TrialResult,
                                             VerifierResult,
                                             )
from tasks_lib.records.record_models import JobRecord, TrialRecord
from tasks_lib.records.trial_cost import cost_text, trial_cost, trial_tokens

_NAMESPACE = uuid.UUID("6f1c2d7e-30a1-4c55-9b1e-7462666c6f77")  # tbflow's own uuid5 namespace

#: Harbor exception types for tbflow's verdicts that are not a score (grouped by Harbor's stats)
EXCEPTION_TYPES = {
    "harness": "TbflowInvalidHarness",
    "environment": "TbflowInvalidEnvironment",
    "verifier": "TbflowInvalidVerifier",
    "interrupted": "TbflowInvalidInterrupted",
    None: "TbflowInvalid",
}
TBFLOW_ERROR = "TbflowError"


def stable_uuid(*parts: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(parts)))


def split_model(model: str | None) -> ModelInfo | None:
    """``provider/model`` -> Harbor's ModelInfo (provider None when the name has no prefix)."""
    if not model:
        return None
    provider, _, name = model.partition("/")
    return ModelInfo(name=name, provider=provider) if name else ModelInfo(name=provider)


def task_checksum(job: JobRecord, task: str) -> str:
    """Harbor's task digest when the dataset was resolved by name, else sha256 over tbflow's
    per-file hashes of the task (the job identity), else of the task's name (no identity kept)."""
    if job.dataset_source is not None:
        for pin in job.dataset_source.tasks:
            if pin.name == task:
                return pin.digest
    files = (job.identity.tasks.get(task) if job.identity is not None else None) or {"name": task}
    return "sha256:" + hashlib.sha256(json.dumps(files, sort_keys=True).encode()).hexdigest()


def exception_info(record: TrialRecord) -> ExceptionInfo | None:
    """The exception Harbor shows for a trial tbflow did not score; None for a scored one."""
    v = record.validity
    if v.status == "scored":
        return None
    kind = EXCEPTION_TYPES.get(v.kind, EXCEPTION_TYPES[None]) if v.status == "invalid" else TBFLOW_ERROR
    what = f"invalid ({v.kind})" if v.status == "invalid" else "a tbflow error"
    evidence = f"\nevidence: {v.evidence}" if v.evidence else ""
    return ExceptionInfo(
        exception_type=kind,
        exception_message=v.reason or what,
        exception_traceback=f"tbflow judged this trial {what}; it is not a score.{evidence}",
        occurred_at=record.ended_at,
        policy_override=ErrorPolicyOverride(should_retry=True, should_grade=False, has_valid_reward=False),
    )


def _tbflow_metadata(record: TrialRecord) -> dict[str, Any]:
    v = record.validity
    return {"tbflow": {
        "trial_id": record.trial_id,
        "attempt": record.spec.attempt,
        "harness_kind": record.harness_kind,
        "verdict": {"status": v.status, "kind": v.kind, "reason": v.reason, "evidence": v.evidence},
        "flags": [f.model_dump(mode="json") for f in record.flags],
    }}


def agent_context(record: TrialRecord) -> AgentContext:
    """Tokens and cost as every tbflow report shows them (``tasks_lib/records/trial_cost.py``): the
    gateway's count, the price table's cost; a partial cost is no total, so Harbor gets null and the
    lower bound is in the metadata."""
    tokens_in, tokens_out = trial_tokens(record.agent)
    cost = trial_cost(record.agent)
    metadata = _tbflow_metadata(record)
    metadata["tbflow"]["cost"] = cost.model_dump(exclude_defaults=True) | {"shown": cost_text(cost)}
    return AgentContext(n_input_tokens=tokens_in, n_output_tokens=tokens_out, cost_usd=cost.usd,
                        metadata=metadata)


def _phase(record: TrialRecord, stage: str) -> TimingInfo | None:
    """A stage's span: tbflow records durations, and the stages run in order from the start."""
    a, v = record.agent, record.verifier
    if stage == "agent" and a is not None:
        end = record.ended_at - timedelta(seconds=v.duration_sec if v is not None else 0.0)
        return TimingInfo(started_at=end - timedelta(seconds=a.duration_sec), finished_at=end)
    if stage == "verifier" and v is not None:
        return TimingInfo(started_at=record.ended_at - timedelta(seconds=v.duration_sec),
                          finished_at=record.ended_at)
    return None


def trial_result(job: JobRecord, record: TrialRecord, trials_dir: str) -> TrialResult:
    """One trial's ``result.json``: a scored trial's rewards, or an invalid one's exception."""
    spec = record.spec
    scored = record.validity.status == "scored"
    rewards: dict[str, float | int] | None = None
    if scored:
        rewards = dict(record.verifier.rewards) if record.verifier and record.verifier.rewards else {}
        rewards.setdefault("reward", record.validity.reward if record.validity.reward is not None else 0.0)
    source = job.dataset_source.spec if job.dataset_source is not None else job.dataset
    return TrialResult(
        id=stable_uuid(job.job_id, spec.trial_id),
        task_name=spec.task_name, trial_name=spec.trial_id,
        trial_uri=f"{trials_dir}/{spec.trial_id}",
        task_id={"path": spec.task_path}, source=source,
        task_checksum=task_checksum(job, spec.task_name),
        config=TrialConfig(task=TaskConfig(path=spec.task_path, source=source), trial_name=spec.trial_id,
                           trials_dir=trials_dir, timeout_multiplier=spec.timeout_multiplier,
                           agent=AgentConfig(name=spec.harness, model_name=spec.model),
                           job_id=stable_uuid(job.job_id)),
        agent_info=AgentInfo(name=spec.harness, version=record.harness_version,
                             model_info=split_model(spec.model)),
        agent_result=agent_context(record),
        verifier_result=VerifierResult(rewards=rewards) if scored else None,
        exception_info=exception_info(record),
        started_at=record.started_at, finished_at=record.ended_at,
        agent_execution=_phase(record, "agent"), verifier=_phase(record, "verifier"),
    )


def job_config(job: JobRecord, records: Sequence[TrialRecord], jobs_dir: str) -> JobConfig:
    config = job.config or {}
    harnesses = [h for h in config.get("harnesses") or sorted({r.spec.harness for r in records})
                 if isinstance(h, str)]
    ds = job.dataset_source
    dataset = (DatasetConfig(name=ds.name, version=ds.version) if ds is not None
               else DatasetConfig(path=job.dataset))
    return JobConfig(
        job_name=job.job_name, jobs_dir=jobs_dir,
        n_attempts=int(config.get("attempts") or 1),
        timeout_multiplier=float(config.get("timeout_multiplier") or 1.0),
        n_concurrent_trials=int(config.get("concurrency") or 1),
        agents=[AgentConfig(name=h, model_name=config.get("model")) for h in harnesses],
        datasets=[dataset],
    )


def job_result(job: JobRecord, results: Sequence[TrialResult]) -> JobResult:
    """The job's ``result.json``: Harbor's counts, per agent the rewards and the exceptions."""
    evals: dict[str, AgentDatasetStats] = {}
    for r in results:
        model = r.agent_info.model_info.name if r.agent_info.model_info else None
        key = "__".join(p for p in (r.agent_info.name, model, r.source or "adhoc") if p)
        stats = evals.setdefault(key, AgentDatasetStats())
        stats.n_trials += 1
        if r.exception_info is not None:
            stats.n_errors += 1
            stats.exception_stats.setdefault(r.exception_info.exception_type, []).append(r.trial_name)
        for name, value in (r.verifier_result.rewards or {}).items() if r.verifier_result else ():
            stats.reward_stats.setdefault(name, {}).setdefault(str(float(value)), []).append(r.trial_name)
    tokens = [r.agent_result for r in results if r.agent_result and r.agent_result.n_input_tokens is not None]
    costs = [r.agent_result.cost_usd for r in results if r.agent_result]  # a sum with an unknown in it is unknown
    return JobResult(
        id=stable_uuid(job.job_id), started_at=job.started_at, finished_at=job.ended_at,
        n_total_trials=len(results),
        stats=JobStats(
            n_completed_trials=len(results),
            n_errored_trials=sum(r.exception_info is not None for r in results),
            evals=evals,
            n_input_tokens=sum(t.n_input_tokens or 0 for t in tokens) if tokens else None,
            n_output_tokens=sum(t.n_output_tokens or 0 for t in tokens) if tokens else None,
            cost_usd=math.fsum(c for c in costs if c is not None) if costs and None not in costs else None,
        ),
    )
