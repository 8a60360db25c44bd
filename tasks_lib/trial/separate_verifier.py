"""run-verifier for a task that asks for a separate verifier (Harbor's ``environment_mode = "separate"``).

Harbor's order, on tbflow's parts: collect from the agent's container (hooks, then artifacts, then
its ``/logs/agent``), **stop** it, start a **fresh container of the same task image** (nothing the
agent did reaches it but the artifacts), put the artifacts back at their sources, run test.sh there
through the same judge as in shared mode (``verifier_stage.run_verifier``: reward on the judge's
channel, the supplied runner where test.sh pins one, the same verdict table), then remove it.

This is *prevention*: the agent's processes, its changes to the toolchain and anything it left
outside the declared artifacts are not in the container that judges it. What the artifacts hold is
still the agent's and runs there as the tests' subject, so the judge's evidence still applies.

The verifier's container is its own trial id (``<trial>.verifier``) under the job's labels, so the
job-level cleanup removes it after a kill -9 of tbflow as it removes every trial container.
"""

from __future__ import annotations

from pathlib import Path

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.container.sandbox import Sandbox, run_dir_layout
from tasks_lib.errors import ContainerError
from tasks_lib.records.artifact_record import ArtifactEntry, CollectRun
from tasks_lib.records.record_models import VerifierRunner
from tasks_lib.task.task_model import Task
from tasks_lib.trial.artifact_collect import collect, restore, run_hooks
from tasks_lib.trial.regrade_replay import replay_artifacts
from tasks_lib.trial.task_command import CommandContext, command_context
from tasks_lib.trial.verifier_stage import STAGE, VerifierStageResult, collect_agent_logs, run_verifier

VERIFIER_SUFFIX = ".verifier"


def collect_from_agent(main: Sandbox, task: Task, trial_dir: Path,
                       ctx: CommandContext) -> tuple[list[CollectRun], list[ArtifactEntry]]:
    """Hooks, then artifacts (shared and separate mode alike): (collect runs, manifest rows)."""
    runs = run_hooks(main, task.config.verifier.collect, ctx, trial_dir, STAGE)
    return runs, collect(main, task, trial_dir, STAGE)


def verify(main: Sandbox, task: Task, trial_dir: Path, timeout_sec: float, max_log_bytes: int,
           runner: VerifierRunner | None, job_id: str, trial_id: str, labels: dict[str, str],
           regrade_source: Path | None = None) -> VerifierStageResult:
    """The run-verifier stage in the mode the task declares: separate, or in the agent's container
    (then after collecting, when the task declares artifacts or hooks, as Harbor does). A regrade
    (only of separate-mode tasks: ``regrade_check``) takes the source trial's artifacts instead."""
    if task.separate_verifier:
        return verify_separately(main, task, trial_dir, timeout_sec, max_log_bytes, runner, job_id, trial_id, labels,
                                 regrade_source)
    runs, rows = collect_from_agent(main, task, trial_dir, command_context(main, task, STAGE)) \
        if task.collects else ([], [])
    result = run_verifier(main, task, trial_dir, timeout_sec, max_log_bytes, runner)
    if task.collects:
        result.outcome = result.outcome.model_copy(update={"artifacts": rows, "collect": runs})
    return result


def verify_separately(main: Sandbox, task: Task, trial_dir: Path, timeout_sec: float, max_log_bytes: int,
                      runner: VerifierRunner | None, job_id: str, trial_id: str,
                      labels: dict[str, str], regrade_source: Path | None = None) -> VerifierStageResult:
    """Collect from ``main`` (a regrade: from the source trial's record), stop it, judge in a fresh
    container of its image."""
    ctx = command_context(main, task, STAGE)  # one inspect: the image and where the hooks run
    runs: list[CollectRun] = []
    if regrade_source is not None:
        rows, logs = replay_artifacts(regrade_source, trial_dir), None
    else:
        runs, rows = collect_from_agent(main, task, trial_dir, ctx)
        logs = collect_agent_logs(main, trial_dir, max_log_bytes)
    _stop(main)
    verifier = Sandbox.start(ctx.image, task.config.environment, job_id, trial_id + VERIFIER_SUFFIX, labels=labels,
                             runner_dir=runner.host_dir if runner is not None else None)
    try:
        verifier.upload_dirs([], STAGE, dirs=run_dir_layout())
        restore(verifier, trial_dir, rows, STAGE)
        result = run_verifier(verifier, task, trial_dir, timeout_sec, max_log_bytes, runner)
    finally:
        verifier.remove()
    result.outcome = result.outcome.model_copy(update={"environment": "separate", "artifacts": rows,
                                                       "collect": runs})
    if result.logs is None:
        result.logs = logs
    return result


def _stop(main: Sandbox) -> None:
    """Stop the agent's container (kept until the trial ends, for its record): a stop through the
    engine's API is never read as the agent's doing (container_health.OUTSIDE_ACTIONS)."""
    try:
        get_client().api.kill(main.id)
    except DOCKER_ERRORS as exc:
        raise ContainerError(STAGE, f"the agent's container could not be stopped before the separate "
                                    f"verifier: {exc}") from exc
