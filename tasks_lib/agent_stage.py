"""run-agent: start the trial container, upload the harness, run the agent under its deadline.

The agent runs as a detached exec in its own session (see ``container_scripts``). At the
deadline its sessions and their descendants are killed *inside the container* — killing a local
``docker exec`` client would leave them running — and the outcome is recorded as a timeout, which
is data for ``classify``, not an exception.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from harnesses.base import Harness, PreparedHarness
from .container_scripts import AGENT_SID_GLOB, RUN_DIR
from .records import AgentOutcome, ProcessInfo
from .sandbox import Sandbox, run_dir_layout
from .task_model import Task

STAGE = "run-agent"


class AgentStageResult(BaseModel):
    outcome: AgentOutcome
    killed_at_deadline: list[ProcessInfo] = Field(default_factory=list)


def run_agent(sandbox: Sandbox, task: Task, harness: Harness, prepared: PreparedHarness,
              trial_dir: Path, timeout_sec: float) -> AgentStageResult:
    command = harness.command(task, prepared, None)
    sandbox.upload_dirs([(u.source, u.target) for u in prepared.uploads], STAGE, dirs=run_dir_layout())
    stdout_path = f"/logs/agent/{command.stdout_name}"
    stderr_path = f"/logs/agent/{command.stderr_name}" if command.stderr_name else None
    killed: list[ProcessInfo] = []

    def stop_agent() -> None:
        k, _ = sandbox.processes(STAGE, [AGENT_SID_GLOB])
        killed.extend(k)

    exec_id = sandbox.run_agent_command(command.argv, f"{RUN_DIR}/agent-1.sid", stdout_path, stderr_path, STAGE,
                                        user=command.user, env=command.env, workdir=None)
    result = sandbox.wait(exec_id, timeout_sec, STAGE, on_deadline=stop_agent)
    sandbox.download("/logs/agent", trial_dir, STAGE)
    agent_dir = trial_dir / "agent"
    outcome = AgentOutcome(
        exit_code=result.exit_code,
        timed_out=result.timed_out,
        timeout_sec=timeout_sec,
        duration_sec=round(result.duration_sec, 3),
        usage=harness.parse_usage(agent_dir),
        stdout_log=f"agent/{command.stdout_name}",
        stderr_log=f"agent/{command.stderr_name}" if command.stderr_name else None,
    )
    return AgentStageResult(outcome=outcome, killed_at_deadline=killed)
