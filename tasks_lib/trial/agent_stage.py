"""run-agent: start the trial container, upload the harness, run the agent under its deadline.

The agent runs as an exec in its own session, started by tbflow's static launcher
(``Sandbox.launch``), which reports the session id on the exec's own stream. At the deadline that
session and its descendants are killed *inside the container* by the judge — killing a local
``docker exec`` client would leave them running — and the outcome is recorded as a timeout, which
is data for ``classify``, not an exception. A model harness gets its link to the model opened
just before it starts and closed as soon as it ends (``model_link``).

The agent's logs stay in ``/logs/agent`` until run-verifier downloads ``/logs`` in one call;
``read_agent_logs`` then completes the outcome (usage, error line) from them.

A host-side agent (``HostHarness``) has no command: its loop runs on the host (``host_run``) and
its commands come in through the same launcher, sessions and kill (``host_env``).
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from tasks_lib.trial.harness_api import Harness, PreparedHarness
from tasks_lib.container.archives import bundle_tar
from tasks_lib.errors import ContainerError
from tasks_lib.gateway.gateway_usage import GatewayUsage
from tasks_lib.gateway.exchange.exchange_model import EXCHANGE_FILE
from tasks_lib.gateway.model_gateway import TOKEN_PATTERN
from tasks_lib.trial.model_link import close_link, open_link
from tasks_lib.container.container_outcomes import ProcessInfo
from tasks_lib.records.record_models import AgentOutcome, TrialFlag, TrialSpec, Usage
from tasks_lib.container.sandbox import Sandbox, run_dir_layout
from tasks_lib.trial.healthcheck import run_healthcheck
from tasks_lib.trial.task_command import command_context
from tasks_lib.task.task_model import Task
from tasks_lib.trial.host_agent_api import HOST_LOGS_DIR, HostHarness
from tasks_lib.trial.host_env import EXEC_DIR
from tasks_lib.trial.host_run import HostRun
from tasks_lib.trial.storage_watch import StorageWatch

STAGE = "run-agent"


class AgentStageResult(BaseModel):
    outcome: AgentOutcome
    killed_at_deadline: list[ProcessInfo] = Field(default_factory=list)
    #: the sessions the agent's commands were started in (the launcher's reports)
    sessions: list[int] = Field(default_factory=list)
    #: what went wrong with tbflow's own tools at the deadline (the agent's doing: it is root in there)
    kill_problem: str | None = None
    #: what the stage noticed about the harness itself (a host plug-in that raised after reaching the model)
    flags: list[TrialFlag] = Field(default_factory=list)
    #: the agent passed the task's storage_mb and was stopped (``storage_watch``): its result, scored 0
    over_storage: TrialFlag | None = None


def run_agent(sandbox: Sandbox, spec: TrialSpec, task: Task, harness: Harness, prepared: PreparedHarness,
              trial_dir: Path, timeout_sec: float) -> AgentStageResult:
    small = [(u.source, u.target) for u in prepared.uploads if not u.target.startswith("/opt/tbflow/")]
    exec_dir = [(EXEC_DIR, 0o777)] if isinstance(harness, HostHarness) else []  # a host agent's command output
    hc = task.config.environment.healthcheck
    if hc is not None:  # the task's environment must be ready before the agent's files go in
        run_healthcheck(sandbox, hc, command_context(sandbox, task, STAGE), trial_dir, STAGE)
    sandbox.upload_dirs(small, STAGE, dirs=run_dir_layout() + exec_dir)
    for u in prepared.uploads:
        if u.target.startswith("/opt/tbflow/"):  # an immutable harness bundle: its tar is reused
            sandbox.upload_tar(bundle_tar(u.source, u.target), u.target, STAGE)
    watch = StorageWatch(sandbox, task.config.environment.storage_mb)
    if isinstance(harness, HostHarness):
        run = HostRun(sandbox, spec, task, harness, trial_dir, timeout_sec)
        with watch.running(run.stop_now):
            outcome, flags = run.run()
        outcome.storage = watch.count()
        return AgentStageResult(outcome=outcome, killed_at_deadline=run.killed, sessions=run.sessions,
                                kill_problem="; ".join(run.problems) or None, flags=flags,
                                over_storage=watch.flag(trial_dir))
    access = (open_link(sandbox, spec.job_id, spec.trial_id, spec.model or "", harness.wire_api,
                        trial_dir / EXCHANGE_FILE)
              if harness.kind == "model" else None)
    gateway: GatewayUsage | None = None
    killed: list[ProcessInfo] = []
    sessions: list[int] = []
    problems: list[str] = []
    try:
        command = harness.command(task, prepared, access)
        stdout_path = f"/logs/agent/{command.stdout_name}"
        stderr_path = f"/logs/agent/{command.stderr_name}" if command.stderr_name else None

        def stop_agent() -> None:
            try:
                k, _ = sandbox.processes(STAGE, sessions)
                killed.extend(k)
            except ContainerError as exc:
                problems.append(exc.message)

        exec_id, sid = sandbox.launch(command.argv, stdout_path, stderr_path, STAGE, user=command.user, env=command.env)
        sessions.append(sid)
        with watch.running(stop_agent):
            result = sandbox.wait(exec_id, timeout_sec, STAGE, on_deadline=stop_agent)
    finally:
        if access is not None:
            gateway = close_link(sandbox, spec.job_id, spec.trial_id)
    outcome = AgentOutcome(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        timeout_sec=timeout_sec,
        duration_sec=round(result.duration_sec, 3),
        stdout_log=f"agent/{command.stdout_name}",
        stderr_log=f"agent/{command.stderr_name}" if command.stderr_name else None,
        gateway_usage=gateway,
        storage=watch.count(),
    )
    return AgentStageResult(outcome=outcome, killed_at_deadline=killed, sessions=sessions,
                            kill_problem="; ".join(problems) or None, over_storage=watch.flag(trial_dir))


def read_agent_logs(outcome: AgentOutcome, harness: Harness, trial_dir: Path) -> AgentOutcome:
    """The outcome completed from the agent's downloaded logs: usage, error line, and whether
    the CLI's log and the gateway agree (the logs come down with the verifier's, in one call). A
    host-side agent's logs are on the host already, in ``host-agent/``."""
    agent_dir = trial_dir / (HOST_LOGS_DIR if isinstance(harness, HostHarness) else "agent")
    have_logs = agent_dir.is_dir()
    usage = harness.parse_usage(agent_dir) if have_logs else None
    error_line = harness.error_line(agent_dir) if have_logs else None
    return outcome.model_copy(update=dict(
        usage=usage,
        exit_meaning=harness.semantic_exit_codes.get(outcome.exit_code) if outcome.exit_code is not None else None,
        error_line=_redact(error_line),
        usage_disagreement=usage_disagreement(usage, outcome.gateway_usage) if harness.kind == "model" else None,
    ))


def usage_disagreement(cli: Usage | None, gateway: GatewayUsage | None) -> str | None:
    """Flag when the CLI's log and the gateway tell different stories about reaching the model.

    The gateway seeing *more* is expected (CLIs do not itemise side calls such as a title
    request); the CLI claiming tokens the gateway never saw, or either side seeing none while the
    other saw some, is worth a reader's attention.
    """
    c = cli.total_tokens if cli else 0
    g = gateway.total_tokens if gateway else 0
    if c > 0 and g == 0:
        return f"the CLI's log shows {c} tokens but the gateway counted none"
    if c == 0 and g > 0:
        return f"the gateway counted {g} tokens but the CLI's log shows none"
    if c > g:
        return f"the CLI's log shows {c} tokens, more than the {g} the gateway counted"
    return None


def _redact(text: str | None) -> str | None:
    """Keep per-trial tokens out of records (an upstream may echo the key it was sent)."""
    return TOKEN_PATTERN.sub("[REDACTED]", text) if text else text
