"""The trial DAG: prepare-harness → build-image → run-agent → kill-process-groups →
run-verifier → classify, each a Prefect task, run inline inside one ``trial`` task.

One thread holds one trial (the topology measured fastest, docs/architecture.md §4).

Caching: no stage is cached by Prefect. build-image needs no cache: ``ensure_image`` finds an
image already built for the task's context and reuses it in milliseconds (a pruned image is simply
built again), and prepare-harness keeps its result in the harness bundle cache on disk.
run-agent, kill-process-groups and run-verifier must not be cached: their evidence lives in the
trial's container and in a trial dir that every run of the trial starts empty, so a re-run trial
(a crash, an unreadable trial.json) must run them again rather than reuse results whose logs are
gone. classify is never cached, so fixes to the rules apply on resume.

A bug in tbflow (any exception it does not name) ends the trial as ``error`` with its traceback in
``error.txt``: never booked as an environment failure, never retried, re-run on resume.
When the container stopped under the agent (it killed PID 1), ``container_health`` decides from
Docker's evidence whether that is the agent's result (scored 0, flagged) or the environment's.

Retries: an ``EnvironmentFailure`` re-raises while ``--env-retries`` remain and Prefect re-runs
the trial (its ``retry_condition_fn`` accepts only that type); the last try is recorded as
invalid: environment with every try's error. Agent and verifier outcomes are data and are never
retried. The trial's verdict, and whether a failure is retried, is one table over the evidence the
stages collected (``tasks_lib/trial/trial_verdict.py``): this module only collects and acts. The
failing stage asks the same table, on the same evidence: a try the trial retries ends its stage
``Retried``, not ``Failed`` (``flows/stage_retried.py``). The container is removed in
``finally``; a trial interrupted by a stopping job raises ``Interrupted`` and leaves no record.

Engine outages (a dockerd restart): every Docker call's failure, including the connection errors
the SDK lets through as plain ``requests`` errors, is an environment failure. A trial starts only
once the engine answers, and a failed try waits for it before it is retried (or recorded), so a
restart of a few seconds costs the trials in flight one try and the queued ones nothing.
"""

from __future__ import annotations

import functools
import json
import os
import socket
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, TypeVar, cast

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.utilities.annotations import quote
from prefect.context import TaskRunContext
from prefect.runtime import flow_run
from prefect.states import Completed, Failed, State

from flows.stage_retried import ends_retried, outcome, trial_try
from tasks_lib.trial.harness_api import PreparedHarness
from tasks_lib.trial.host_agent_api import HostHarness
from harnesses.plugin_guard import guarded
from harnesses.registry import get_harness, resolve_harness
from tasks_lib import interrupts
from tasks_lib.trial.agent_stage import AgentStageResult, read_agent_logs, run_agent
from tasks_lib.trial.trajectory_stage import with_trajectory
from tasks_lib.trial.container_health import stopped_container_flag
from tasks_lib.container.container_outcomes import LogsOutcome
from tasks_lib.container.docker_client import ENGINE_WAIT_SEC, LABEL_FLOW_RUN, LABEL_JOB_DIR, wait_for_engine
from tasks_lib.errors import ContainerError, EnvironmentFailure
from tasks_lib.trial.image_ahead import take_ahead
from tasks_lib.trial.images import ensure_image
from tasks_lib.store.job_store import JobStore
from tasks_lib.trial.model_link import gateway_mounts
from tasks_lib.trial.process_groups import kill_process_groups
from tasks_lib.records.record_models import (ImageOutcome, KillOutcome, RanOn, TrialFlag, TrialRecord, TrialSpec,
                                             VerifierOutcome, VerifierRunner)
from tasks_lib.container.container_removal import container_name, remove_trial_container
from tasks_lib.container.sandbox import Sandbox
from tasks_lib.task.task_loader import load_task
from tasks_lib.task.task_model import Task
from tasks_lib.text_clean import one_line
from tasks_lib.trial.runner_choice import choose_runner
from tasks_lib.trial.stage_failures import StageFailure, stage_failure
from tasks_lib.trial.trial_evidence import AgentsDoing, TrialEvidence, failure_may_be_agents
from tasks_lib.trial.trial_verdict import TrialVerdict, decide, retried
from tasks_lib.trial.regrade_replay import regrade_origin, replay_agent
from tasks_lib.trial.separate_verifier import verify
from tasks_lib.trial.verifier_stage import VerifierStageResult, collect_agent_logs

_NO_CACHE: dict[str, Any] = dict(cache_policy=NO_CACHE, persist_result=False)
_T = TypeVar("_T")


def q(value: _T) -> _T:
    """A stage's parameter as Prefect's ``quote``: the task gets it as is, and Prefect does not walk
    it for futures to resolve (a ``TrialSpec`` or a loaded ``Task`` at every stage: ~3 ms a trial)."""
    return cast(_T, quote(value))


@task(name="prepare-harness", task_run_name="{spec.trial_id} · prepare-harness", **_NO_CACHE)
@ends_retried(agent_returned=False)
def prepare_harness(spec: TrialSpec, task_: Task) -> PreparedHarness:
    """Not cached by Prefect on purpose: its durable result is the harness bundle cache on disk
    (content-addressed, written atomically, so committed the moment it is built), and a Prefect
    record could only point into that cache and go stale when the cache is pruned. A hit there
    costs at most ~0.7 s (pi's 19.6k files are re-checked). A regrade runs no harness: nothing to prepare."""
    harness = trial_harness(spec)
    if spec.regrade_source:
        return PreparedHarness(name=harness.name, version=harness.version, kind=harness.kind)
    return harness.prepare(task_)


def trial_harness(spec: TrialSpec):
    """The trial's harness, resolved from how the job names it; a plug-in's own exceptions become
    harness failures (``harnesses/plugin_guard.py``)."""
    ref = spec.harness_reference
    return guarded(get_harness(ref), resolve_harness(ref).source)


@task(name="build-image", task_run_name="{spec.trial_id} · build-image", **_NO_CACHE)
@ends_retried(agent_returned=False)
def build_image(spec: TrialSpec, task_: Task, trial_dir: Path, first_try: bool = True) -> ImageOutcome:
    """The job's build lane may have built the image already (``tasks_lib/trial/image_ahead.py``);
    the verifier's runner is prepared with it (``tasks_lib/trial/runner_choice.py``)."""
    image = (take_ahead(spec.job_id, task_, trial_dir, first_try)
             or ensure_image(task_, trial_dir / "build.log", "build.log"))
    return image.model_copy(update={"runner": choose_runner(task_, spec.verbatim_test_sh)})


@task(name="run-agent", task_run_name="{spec.trial_id} · run-agent", **_NO_CACHE)
@ends_retried(agent_returned=False)
def run_agent_stage(spec: TrialSpec, task_: Task, prepared: PreparedHarness, image: str,
                    trial_dir: Path, runner_dir: str | None = None) -> AgentStageResult:
    interrupts.check()
    harness = trial_harness(spec)
    # a host-side agent reaches the gateway from the host: its container gets no way to the model
    mounts = gateway_mounts(spec.job_id) if harness.kind == "model" and not isinstance(harness, HostHarness) else None
    run_id = flow_run.get_id()
    labels = {LABEL_JOB_DIR: str(trial_dir.resolve().parent.parent)}
    if run_id:
        labels[LABEL_FLOW_RUN] = str(run_id)
    sandbox = Sandbox.start(image, task_.config.environment, spec.job_id, spec.trial_id, mounts=mounts, labels=labels,
                            runner_dir=runner_dir)
    if spec.regrade_source:  # the source trial's recorded agent phase stands in for running the agent
        return replay_agent(Path(spec.regrade_source), trial_dir)
    return run_agent(sandbox, spec, task_, harness, prepared, trial_dir,
                     task_.config.agent.timeout_sec * spec.timeout_multiplier)


@task(name="kill-process-groups", task_run_name="{spec.trial_id} · kill-process-groups", **_NO_CACHE)
@ends_retried(agent_returned=True)
def kill_stage(spec: TrialSpec, agent: AgentStageResult) -> KillOutcome:
    return kill_process_groups(Sandbox.attach(spec.job_id, spec.trial_id), agent.outcome, agent.killed_at_deadline,
                               agent.sessions)


@task(name="run-verifier", task_run_name="{spec.trial_id} · run-verifier", **_NO_CACHE)
@ends_retried(agent_returned=True)
def run_verifier_stage(spec: TrialSpec, task_: Task, trial_dir: Path,
                       runner: VerifierRunner | None = None) -> VerifierStageResult:
    interrupts.check()
    labels = {LABEL_JOB_DIR: str(trial_dir.resolve().parent.parent)}
    return verify(Sandbox.attach(spec.job_id, spec.trial_id), task_, trial_dir,
                  task_.config.verifier.timeout_sec * spec.timeout_multiplier, spec.max_log_bytes, runner,
                  spec.job_id, spec.trial_id, labels, Path(spec.regrade_source) if spec.regrade_source else None)


@task(name="classify", task_run_name="{trial_id} · classify", **_NO_CACHE)
def classify_stage(trial_id: str, evidence: TrialEvidence) -> TrialVerdict:
    """The trial's verdict table over the try's evidence (``tasks_lib/trial/trial_verdict.py``)."""
    return decide(evidence)


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
def run_trial(spec: TrialSpec, job_dir: str) -> State:
    return _trial_body(spec, job_dir)


@dataclass
class Evidence:
    """What the stages of one try left, filled in as they run; the trial's record is built from it."""

    prepared: PreparedHarness | None = None
    image: ImageOutcome | None = None
    agent: AgentStageResult | None = None
    kill: KillOutcome | None = None
    verifier: VerifierOutcome | None = None
    broke: TrialFlag | None = None
    logs: LogsOutcome | None = None
    failure: StageFailure | None = None
    memory_mb: int | None = None
    flags: list[TrialFlag] = field(default_factory=list)


@dataclass(frozen=True)
class _Try:
    """Which try of the trial this is (Prefect re-runs it for a retryable environment failure)."""

    first: bool
    retries_left: int
    retry_log: Path

    @classmethod
    def current(cls, store: JobStore, trial_id: str) -> "_Try":
        ctx = TaskRunContext.get()
        run_count = ctx.task_run.run_count if ctx else 1
        retries_left = (ctx.task.retries if ctx else 0) - (run_count - 1)
        return cls(run_count <= 1, retries_left, store.job_dir / ".retries" / f"{trial_id}.json")

    def earlier_errors(self) -> list[str]:
        return json.loads(self.retry_log.read_text()) if self.retry_log.is_file() else []


def _trial_body(spec: TrialSpec, job_dir: str) -> State:
    store = JobStore(Path(job_dir))
    this_try = _Try.current(store, spec.trial_id)
    if this_try.first:
        this_try.retry_log.unlink(missing_ok=True)
    trial_dir = store.reset_trial_dir(spec.trial_id)
    harness = trial_harness(spec)
    started = datetime.now(timezone.utc)
    ev = Evidence()
    agents_doing = _agents_doing(spec, trial_dir, ev)
    try:
        with trial_try(this_try.retries_left, agents_doing):
            _run_stages(spec, trial_dir, ev, this_try.first)
    except interrupts.Interrupted:
        raise
    except Exception as exc:  # every other failure is the record's (tasks_lib/trial/stage_failures.py)
        _note_failure(trial_dir, ev, exc, agents_doing)
    finally:
        _collect_and_remove(spec, trial_dir, ev)
    return _finish(spec, harness, store, trial_dir, ev, this_try, started, agents_doing)


def _run_stages(spec: TrialSpec, trial_dir: Path, ev: Evidence, first_try: bool) -> None:
    if not wait_for_engine(recent_ok=True):  # an engine restarting: queued trials wait for it instead of failing
        raise ContainerError("docker", f"the Docker engine did not answer for {ENGINE_WAIT_SEC:g}s")
    task_ = load_task(Path(spec.task_path))
    if spec.force_build:
        task_ = task_.built_from_context()
    ev.memory_mb = task_.config.environment.memory_mb
    # the models go quoted (q: not walked by Prefect);
    # a failure the trial will retry ends a stage Retried, not Failed (flows/stage_retried.py)
    ev.prepared = outcome(prepare_harness(q(spec), q(task_)))
    ev.image = outcome(build_image(q(spec), q(task_), trial_dir, first_try))
    runner = ev.image.runner
    ev.agent = agent = outcome(run_agent_stage(q(spec), q(task_), q(ev.prepared), ev.image.tag, trial_dir,
                                               runner.host_dir if runner else None))
    ev.flags += agent.flags
    ev.kill = kill = outcome(kill_stage(q(spec), q(agent)))
    mode = " (separate)" if task_.separate_verifier else ""  # the UI says which verifier mode ran
    verifier_stage = run_verifier_stage.with_options(task_run_name=f"{spec.trial_id} · run-verifier{mode}")
    checked = outcome(verifier_stage(q(spec), q(task_), trial_dir, q(runner)))
    # past the task's storage_mb: the agent's result whatever else it did (tasks_lib/trial/storage_watch.py)
    ev.verifier, ev.broke, ev.logs = checked.outcome, agent.over_storage or checked.broke, checked.logs
    ev.flags += checked.flags
    if checked.ran_next_to is not None:
        ev.kill = kill = kill.model_copy(update={"left_running": checked.ran_next_to})
    stuck = agent.kill_problem or kill.problem
    if stuck and ev.broke is None:  # the agent kept tbflow from ending its processes: its own result
        ev.broke = TrialFlag(kind="broke-container", message=f"the agent kept tbflow from killing its processes at "
                                                             f"the cut-off ({stuck}); they ran on next to the verifier")


def _agents_doing(spec: TrialSpec, trial_dir: Path, ev: Evidence) -> Callable[[], TrialFlag | None]:
    """Did the agent break its own container (past its storage, or it stopped it; container_health)?
    Read from Docker at most once a try, so the stage that failed and the trial's record, which ask
    it in turn, see one answer."""

    @functools.cache
    def read() -> TrialFlag | None:
        assert ev.agent is not None, "asked only once the agent stage has returned"
        name = container_name(spec.job_id, spec.trial_id)
        return ev.agent.over_storage or stopped_container_flag(name, trial_dir, ev.memory_mb)

    return read


def _note_failure(trial_dir: Path, ev: Evidence, exc: Exception, agents_doing: AgentsDoing) -> None:
    """The failure as evidence (typed, its traceback kept: tasks_lib/trial/stage_failures.py). One
    that may be the agent's doing (it stopped its own container) has Docker's evidence read now,
    while the container is there; whose it is, and whether it is retried, is the verdict table's."""
    ev.failure = stage_failure(exc, trial_dir)
    if failure_may_be_agents(ev.failure, agent_returned=ev.agent is not None):
        agents_doing()  # memoized: the table's rows read this answer


def _collect_and_remove(spec: TrialSpec, trial_dir: Path, ev: Evidence) -> None:
    """The agent's logs of a try that ended before the verifier, then the container, always."""
    try:
        if (ev.failure is not None or ev.broke is not None) and ev.image is not None and ev.verifier is None:
            ev.logs = collect_agent_logs(Sandbox.attach(spec.job_id, spec.trial_id), trial_dir, spec.max_log_bytes)
    finally:  # a stop (Interrupted) during that download still removes the container
        remove_trial_container(spec.job_id, spec.trial_id)


def _finish(spec: TrialSpec, harness, store: JobStore, trial_dir: Path, ev: Evidence, this_try: _Try,
            started: datetime, agents_doing: AgentsDoing) -> State:
    """Retry the try when the verdict table says so (a retryable environment failure while retries
    are left); else record the trial with the table's verdict."""
    evidence = TrialEvidence(harness.kind, ev.failure, agent_returned=ev.agent is not None, agents_doing=agents_doing,
                             retries_left=this_try.retries_left, verifier=ev.verifier, broke=ev.broke)
    error = evidence.error  # Docker's evidence was read (memoized) before the container went
    if error is not None and error.kind == "environment" and wait_for_engine():
        # The engine was away (restarting) when the container should have gone: remove it now,
        # and retry only once the engine answers again, so the outage costs one try, not all.
        remove_trial_container(spec.job_id, spec.trial_id)
    agent_outcome = read_agent_logs(ev.agent.outcome, harness, trial_dir) if ev.agent else None
    if agent_outcome is not None and harness.kind == "model":
        agent_outcome = with_trajectory(agent_outcome, spec, harness.version, trial_dir, store.job_dir)
    interrupts.check()
    earlier = this_try.earlier_errors()
    evidence = replace(evidence, agent=agent_outcome, earlier_tries=len(earlier))
    if ev.failure is not None and retried(evidence):
        failed = ev.failure.error
        this_try.retry_log.parent.mkdir(exist_ok=True)
        this_try.retry_log.write_text(json.dumps(earlier + [f"{failed.stage}: {failed.message}"]))
        raise EnvironmentRetry(failed.stage, f"retrying after: {failed.message}", failed.evidence)
    verdict = classify_stage(spec.trial_id, q(evidence))
    ended = datetime.now(timezone.utc)
    record = TrialRecord(
        spec=spec, harness_kind=harness.kind, harness_version=harness.version,
        harness_provenance=[p.model_dump(mode="json") for p in getattr(ev.prepared, "provenance", [])],
        harness_source=resolve_harness(spec.harness_reference).source,
        started_at=started, ended_at=ended, duration_sec=round((ended - started).total_seconds(), 3),
        image=ev.image, error=verdict.error, agent=agent_outcome, kill=ev.kill, verifier=ev.verifier, logs=ev.logs,
        validity=verdict.validity, flags=ev.flags + ([verdict.broke] if verdict.broke is not None else []),
        previous_tries=store.previous_tries(spec.trial_id), env_retry_errors=earlier, ran_on=ran_on(),
        regraded_from=regrade_origin(Path(spec.regrade_source)) if spec.regrade_source else None,
    )
    store.write_trial(record)
    this_try.retry_log.unlink(missing_ok=True)
    return verdict_state(record)


def ran_on() -> RanOn:
    """This machine and the flow run this trial runs in (the job's, or a shard's)."""
    run_id = flow_run.get_id()
    return RanOn(host=socket.gethostname(), pid=os.getpid(), flow_run_id=str(run_id) if run_id else None,
                 flow_run_name=flow_run.get_name() if run_id else None,
                 flow_name=flow_run.get_flow_name() if run_id else None)


#: the state name of a scored trial that carries flags (tampering, processes left running)
FLAGGED = "Flagged"


def verdict_state(record: TrialRecord) -> State:
    """The trial task's final state: ``Completed`` for a scored trial, and for an invalid one a red
    ``Failed`` named ``Invalid`` (a filter on that name lists them; a green Completed one was
    invisible among the scored: issue 19), a scored trial with flags a ``Completed`` named ``Flagged``,
    with the verdict (and the flags' kinds) as the state message. The message is
    one line (the UI shows it as one); the record keeps the reason's line breaks. Either way the
    data is the record (what ``future.result(raise_on_failure=False)`` returns), and an invalid
    trial is never retried by Prefect (``_retry_environment_only`` retries only the
    ``EnvironmentRetry`` a retryable environment failure raises before any record exists); the
    job's own verdict is the job run's state (``flows/job/job_verdict.py``).
    """
    v = record.validity
    flags = f"; flagged: {', '.join(f.kind for f in record.flags)}" if record.flags else ""
    if v.status == "scored":  # a flagged one is named apart: a filter on "Flagged" lists them (issue 31)
        return Completed(data=record, name=FLAGGED if record.flags else "Completed",
                         message=f"scored {v.reward:g}{flags}")
    reason = one_line(f"invalid: {v.kind}: {v.reason or ''}", 1000 - len(flags))
    return Failed(data=record, name="Invalid", message=reason + flags)


#: seconds before an environment failure's retry (± jitter). One number, not a backoff list: the
#: Prefect UI shows a list of delays as "NaNs".
ENV_RETRY_DELAY_SEC = 3


def trial_task_for(job_dir: Path, env_retries: int, harness: str, job_tags: list[str]):
    """The trial task of one harness, with this job's retry policy for environment failures, tagged
    with the job's tags (``job:``, ``dataset:``, ``model:``) and its own harness.

    The tags are the task's own, not a ``tags()`` context around the trials, so the stages' task
    runs carry none: a tag filter in the UI lists each trial once, not with its six stages, and an
    untagged task run skips Prefect's tag-concurrency call (a server round trip per task run, with
    no limit set: ~9 ms of CPU a trial over six stages, bench/RESULTS.md, "What one Prefect task
    run costs")."""
    own = {t for t in job_tags if not t.startswith("harness:")} | {f"harness:{harness}"}
    return run_trial.with_options(retries=env_retries, retry_condition_fn=_retry_environment_only,
                                  retry_delay_seconds=ENV_RETRY_DELAY_SEC, retry_jitter_factor=0.5, tags=own)
