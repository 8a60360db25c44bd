"""The trial DAG: prepare-harness → build-image → run-agent → kill-process-groups →
run-verifier → classify, each a Prefect task, run inline inside one ``trial`` task.

One thread holds one trial (the topology measured fastest, docs/architecture.md §4).

Caching (docs/architecture.md §4): every cached stage has an explicit key
``<job id>/<trial id>/<stage>-<job identity>-g<generation>-v<STAGE_KEY_VERSION>`` — never
Prefect's INPUTS policy, which collides across tasks, nor its default, which includes the run id.
build-image commits eagerly, so a crash later in the trial does not redo it (prepare-harness
keeps its result in the harness bundle cache on disk instead); run-agent → kill-process-groups → run-verifier commit only with the trial (the verifier needs
the agent's container, so that chain is all-or-nothing). A cached build whose image was pruned is
a miss. classify is never cached, so fixes to the rules apply on resume.

Retries: an ``EnvironmentFailure`` re-raises while ``--env-retries`` remain and Prefect re-runs
the trial (its ``retry_condition_fn`` accepts only that type); the last try is recorded as
invalid: environment with every try's error. Agent and verifier outcomes are data and are never
retried. The container is removed in ``finally``; a trial interrupted by a stopping job raises
``Interrupted`` and leaves no record.
"""

from __future__ import annotations

import json
import traceback
from datetime import datetime, timezone
from pathlib import Path

import requests
from docker.errors import DockerException
from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import TaskRunContext
from prefect.runtime import flow_run
from prefect.tasks import exponential_backoff
from prefect.transactions import CommitMode, transaction

from tasks_lib.trial.harness_api import PreparedHarness
from harnesses.registry import get_harness
from tasks_lib.trial import interrupts
from tasks_lib.trial.agent_stage import AgentStageResult, read_agent_logs, run_agent
from tasks_lib.trial.classify import classify
from tasks_lib.container.docker_client import LABEL_FLOW_RUN, LABEL_JOB_DIR
from tasks_lib.errors import EnvironmentFailure, HarnessSetupError
from tasks_lib.trial.image_ahead import take_ahead
from tasks_lib.trial.images import ensure_image, image_present
from tasks_lib.job.job_store import JobStore
from tasks_lib.gateway.model_link import gateway_mounts
from tasks_lib.trial.process_groups import kill_process_groups
from tasks_lib.job.records import (AgentOutcome, ImageOutcome, KillOutcome, StageError, TrialRecord, TrialSpec, Validity,
                               VerifierOutcome)
from tasks_lib.container.sandbox import Sandbox, remove_trial_container
from tasks_lib.job.task_loader import load_task
from tasks_lib.job.task_model import Task
from tasks_lib.trial.verifier_stage import VerifierStageResult, collect_agent_logs, run_verifier

STAGE_KEY_VERSION = 2
_NO_CACHE = dict(cache_policy=NO_CACHE, persist_result=False)


def stage_key(stage: str):
    """A cache-key function for ``stage``; a trial's spec must be its ``spec`` parameter."""

    def key(ctx: TaskRunContext, params: dict) -> str | None:
        spec: TrialSpec = params["spec"]
        return (f"{spec.job_id}/{spec.trial_id}/{stage}-{spec.identity_digest[:16]}-g{spec.generation}"
                f"-v{STAGE_KEY_VERSION}")

    return key


def _build_key(ctx: TaskRunContext, params: dict) -> str | None:
    """Like ``stage_key``, but a miss when the image is gone (Prefect cannot see a pruned image)."""
    return stage_key("build-image")(ctx, params) if image_present(params["task_"]) else None


@task(name="prepare-harness", **_NO_CACHE)
def prepare_harness(spec: TrialSpec, task_: Task) -> PreparedHarness:
    """Not cached by Prefect on purpose: its durable result is the harness bundle cache on disk
    (content-addressed, written atomically, so committed the moment it is built), and a Prefect
    record could only point into that cache and go stale when the cache is pruned. A hit there
    costs at most ~0.7 s (pi's 19.6k files are re-checked)."""
    return get_harness(spec.harness).prepare(task_)


@task(name="build-image")
def build_image(spec: TrialSpec, task_: Task, trial_dir: Path, first_try: bool = True) -> ImageOutcome:
    """The job's build lane may have built the image already (``tasks_lib/trial/image_ahead.py``)."""
    return (take_ahead(spec.job_id, task_, trial_dir, first_try)
            or ensure_image(task_, trial_dir / "build.log", "build.log"))


@task(name="run-agent")
def run_agent_stage(spec: TrialSpec, task_: Task, prepared: PreparedHarness, image: str,
                    trial_dir: Path) -> AgentStageResult:
    interrupts.check()
    harness = get_harness(spec.harness)
    mounts = gateway_mounts(spec.job_id) if harness.kind == "model" else None
    run_id = flow_run.get_id()
    labels = {LABEL_JOB_DIR: str(trial_dir.resolve().parent.parent)}
    if run_id:
        labels[LABEL_FLOW_RUN] = str(run_id)
    sandbox = Sandbox.start(image, task_, spec.job_id, spec.trial_id, mounts=mounts, labels=labels)
    return run_agent(sandbox, spec, task_, harness, prepared, trial_dir,
                     task_.config.agent.timeout_sec * spec.timeout_multiplier)


@task(name="kill-process-groups")
def kill_stage(spec: TrialSpec, agent: AgentStageResult) -> KillOutcome:
    return kill_process_groups(Sandbox.attach(spec.job_id, spec.trial_id), agent.outcome, agent.killed_at_deadline)


@task(name="run-verifier")
def run_verifier_stage(spec: TrialSpec, task_: Task, trial_dir: Path) -> VerifierStageResult:
    interrupts.check()
    return run_verifier(Sandbox.attach(spec.job_id, spec.trial_id), task_, trial_dir,
                        task_.config.verifier.timeout_sec * spec.timeout_multiplier)


@task(name="classify", **_NO_CACHE)
def classify_stage(kind: str, error: StageError | None, agent: AgentOutcome | None,
                   verifier: VerifierOutcome | None) -> Validity:
    return classify(kind, error, agent, verifier)  # type: ignore[arg-type]


def _retry_environment_only(task_, task_run, state) -> bool:
    """Prefect retries a trial only for environment failures, never for anything else."""
    try:
        exc = state.result(raise_on_failure=False)
    except Exception:  # noqa: BLE001
        return False
    return isinstance(exc, EnvironmentFailure)


class EnvironmentRetry(EnvironmentFailure):
    """Raised to make Prefect retry the trial; carries the failure it retries."""


@task(name="trial", task_run_name="{spec.trial_id}", **_NO_CACHE)
def run_trial(spec: TrialSpec, job_dir: str) -> TrialRecord:
    store = JobStore(Path(job_dir))
    ctx = TaskRunContext.get()
    run_count = ctx.task_run.run_count if ctx else 1
    retries_left = (ctx.task.retries if ctx else 0) - (run_count - 1)
    retry_log = store.job_dir / ".retries" / f"{spec.trial_id}.json"
    if run_count <= 1:
        retry_log.unlink(missing_ok=True)
    trial_dir = store.reset_trial_dir(spec.trial_id)
    harness = get_harness(spec.harness)
    started = datetime.now(timezone.utc)
    image = agent = kill = verifier = error = prepared = None
    retryable = True
    storage = dict(result_storage=store.job_dir / ".cache", persist_result=True)
    try:
        task_ = load_task(Path(spec.task_path))
        with transaction(commit_mode=CommitMode.EAGER):
            prepared = prepare_harness(spec, task_)
            image = build_image.with_options(cache_key_fn=_build_key, **storage)(spec, task_, trial_dir,
                                                                                 run_count <= 1)
        if image.build_log and not (trial_dir / image.build_log).exists():
            image = image.model_copy(update={"build_log": None})  # cached from an earlier try
        agent = run_agent_stage.with_options(cache_key_fn=stage_key("run-agent"), **storage)(
            spec, task_, prepared, image.tag, trial_dir)
        kill = kill_stage.with_options(cache_key_fn=stage_key("kill-process-groups"), **storage)(spec, agent)
        checked = run_verifier_stage.with_options(cache_key_fn=stage_key("run-verifier"), **storage)(
            spec, task_, trial_dir)
        verifier = checked.outcome
        if checked.ran_next_to is not None:
            kill = kill.model_copy(update={"left_running": checked.ran_next_to})
    except interrupts.Interrupted:
        raise
    except HarnessSetupError as exc:
        error = StageError(stage="prepare-harness", kind="harness", message=str(exc))
    except EnvironmentFailure as exc:
        error = StageError(stage=exc.stage, kind="environment", message=exc.message, evidence=exc.evidence)
        retryable = exc.retryable
    except (DockerException, requests.exceptions.RequestException) as exc:
        error = StageError(stage="docker", kind="environment", message=f"Docker engine error: {exc}")
    except Exception as exc:  # a tbflow bug must still end the trial visibly, with its traceback
        (trial_dir / "error.txt").write_text(traceback.format_exc(), encoding="utf-8")
        error = StageError(stage="tbflow", kind="environment", evidence="error.txt",
                           message=f"internal error {type(exc).__name__}: {exc}")
    finally:
        if error is not None and image is not None and verifier is None:  # keep the agent's logs as evidence
            collect_agent_logs(Sandbox.attach(spec.job_id, spec.trial_id), trial_dir)
        remove_trial_container(spec.job_id, spec.trial_id)
    agent_outcome = read_agent_logs(agent.outcome, harness, trial_dir) if agent else None
    interrupts.check()
    earlier = json.loads(retry_log.read_text()) if retry_log.is_file() else []
    if (error is not None and error.kind == "environment" and error.stage != "tbflow" and retryable
            and retries_left > 0):
        retry_log.parent.mkdir(exist_ok=True)
        retry_log.write_text(json.dumps(earlier + [f"{error.stage}: {error.message}"]))
        raise EnvironmentRetry(error.stage, f"retrying after: {error.message}", error.evidence)
    validity = classify_stage(harness.kind, error, agent_outcome, verifier)
    if earlier and error is not None:
        validity.reason = f"{validity.reason} (after {len(earlier) + 1} tries)"
    ended = datetime.now(timezone.utc)
    record = TrialRecord(
        spec=spec, harness_kind=harness.kind, harness_version=harness.version,
        harness_provenance=[p.model_dump(mode="json") for p in getattr(prepared, "provenance", [])],
        started_at=started, ended_at=ended, duration_sec=round((ended - started).total_seconds(), 3),
        image=image, error=error, agent=agent_outcome, kill=kill, verifier=verifier,
        validity=validity, previous_tries=store.previous_tries(spec.trial_id), env_retry_errors=earlier,
    )
    store.write_trial(record)
    retry_log.unlink(missing_ok=True)
    return record


def trial_task_for(job_dir: Path, env_retries: int):
    """The trial task configured with this job's retry policy for environment failures."""
    return run_trial.with_options(retries=env_retries, retry_condition_fn=_retry_environment_only,
                                  retry_delay_seconds=exponential_backoff(backoff_factor=1),
                                  retry_jitter_factor=0.5)
