"""The trial DAG: prepare-harness → build-image → run-agent → kill-process-groups →
run-verifier → classify, each a Prefect task, run inline inside one ``trial`` task.

One thread holds one trial (the topology measured fastest in research/prefect-notes.md §5).
The container is removed in ``finally``, whatever happened. A trial writes its record only when
it finished; if the job is stopping (Ctrl-C, cancellation) it raises ``Interrupted`` and leaves
no record, so a resume runs it again.
"""

from __future__ import annotations

import traceback
from datetime import datetime, timezone
from pathlib import Path

import requests
from docker.errors import DockerException
from prefect import task
from prefect.cache_policies import NO_CACHE

from harnesses.base import PreparedHarness
from harnesses.registry import get_harness
from tasks_lib import interrupts
from tasks_lib.agent_stage import AgentStageResult, run_agent
from tasks_lib.classify import classify
from tasks_lib.errors import EnvironmentFailure, HarnessSetupError
from tasks_lib.images import ensure_image
from tasks_lib.job_store import JobStore
from tasks_lib.process_groups import kill_process_groups
from tasks_lib.records import (AgentOutcome, ImageOutcome, KillOutcome, StageError, TrialRecord, TrialSpec,
                               Validity, VerifierOutcome)
from tasks_lib.sandbox import Sandbox, container_name, _remove_by_name
from tasks_lib.task_loader import load_task
from tasks_lib.task_model import Task
from tasks_lib.verifier_stage import run_verifier

_STAGE = dict(cache_policy=NO_CACHE, persist_result=False)


@task(name="prepare-harness", **_STAGE)
def prepare_harness(harness_name: str, task_: Task) -> PreparedHarness:
    return get_harness(harness_name).prepare(task_)


@task(name="build-image", **_STAGE)
def build_image(task_: Task, trial_dir: Path) -> ImageOutcome:
    return ensure_image(task_, trial_dir / "build.log", "build.log")


@task(name="run-agent", **_STAGE)
def run_agent_stage(spec: TrialSpec, task_: Task, prepared: PreparedHarness, image: str,
                    trial_dir: Path) -> AgentStageResult:
    interrupts.check()
    sandbox = Sandbox.start(image, task_, spec.job_id, spec.trial_id)
    return run_agent(sandbox, task_, get_harness(spec.harness), prepared, trial_dir,
                     task_.config.agent.timeout_sec)


@task(name="kill-process-groups", **_STAGE)
def kill_stage(spec: TrialSpec, agent: AgentStageResult) -> KillOutcome:
    sandbox = Sandbox(container_name(spec.job_id, spec.trial_id), container_name(spec.job_id, spec.trial_id))
    return kill_process_groups(sandbox, agent.outcome, agent.killed_at_deadline)


@task(name="run-verifier", **_STAGE)
def run_verifier_stage(spec: TrialSpec, task_: Task, trial_dir: Path) -> VerifierOutcome:
    interrupts.check()
    sandbox = Sandbox(container_name(spec.job_id, spec.trial_id), container_name(spec.job_id, spec.trial_id))
    return run_verifier(sandbox, task_, trial_dir, task_.config.verifier.timeout_sec)


@task(name="classify", **_STAGE)
def classify_stage(kind: str, error: StageError | None, agent: AgentOutcome | None,
                   verifier: VerifierOutcome | None) -> Validity:
    return classify(kind, error, agent, verifier)  # type: ignore[arg-type]


@task(name="trial", task_run_name="{spec.trial_id}", **_STAGE)
def run_trial(spec: TrialSpec, job_dir: str) -> TrialRecord:
    store = JobStore(Path(job_dir))
    trial_dir = store.reset_trial_dir(spec.trial_id)
    harness = get_harness(spec.harness)
    started = datetime.now(timezone.utc)
    image: ImageOutcome | None = None
    agent: AgentStageResult | None = None
    kill: KillOutcome | None = None
    verifier: VerifierOutcome | None = None
    error: StageError | None = None
    try:
        task_ = load_task(Path(spec.task_path))
        prepared = prepare_harness(spec.harness, task_)
        image = build_image(task_, trial_dir)
        agent = run_agent_stage(spec, task_, prepared, image.tag, trial_dir)
        kill = kill_stage(spec, agent)
        verifier = run_verifier_stage(spec, task_, trial_dir)
    except interrupts.Interrupted:
        raise
    except HarnessSetupError as exc:
        error = StageError(stage="prepare-harness", kind="harness", message=str(exc))
    except EnvironmentFailure as exc:
        error = StageError(stage=exc.stage, kind="environment", message=exc.message, evidence=exc.evidence)
    except (DockerException, requests.exceptions.RequestException) as exc:
        error = StageError(stage="docker", kind="environment", message=f"Docker engine error: {exc}")
    except Exception as exc:  # a tbflow bug must still end the trial visibly, with its traceback
        (trial_dir / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        error = StageError(stage="tbflow", kind="environment", evidence="error.txt",
                           message=f"internal error {type(exc).__name__}: {exc}")
    finally:
        try:
            _remove_by_name(container_name(spec.job_id, spec.trial_id))
        except EnvironmentFailure:
            pass  # the job-level cleanup removes it by label
    interrupts.check()
    if error is not None and interrupts.stopping():
        raise interrupts.Interrupted("the job is stopping")
    validity = classify_stage(harness.kind, error, agent.outcome if agent else None, verifier)
    ended = datetime.now(timezone.utc)
    record = TrialRecord(
        spec=spec, harness_kind=harness.kind, harness_version=harness.version,
        started_at=started, ended_at=ended, duration_sec=round((ended - started).total_seconds(), 3),
        image=image, error=error, agent=agent.outcome if agent else None, kill=kill, verifier=verifier,
        validity=validity,
    )
    store.write_trial(record)
    return record
