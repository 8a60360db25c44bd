"""The ``tbflow-agent`` harness: a ``HostHarness`` whose ``run`` is the loop in ``loop.py``."""

from __future__ import annotations

import inspect
from pathlib import Path

from harnesses.tbflow_agent.events import EVENT_LOG, EventLog, error_of, usage_of
from harnesses.tbflow_agent.loop import run_loop
from tasks_lib import __version__
from tasks_lib.records.record_models import Usage
from tasks_lib.task.task_model import Task
from tasks_lib.trial import harness_api, host_agent_api
from tasks_lib.trial.harness_api import PreparedHarness
from tasks_lib.trial.host_agent_api import AgentSession, HostHarness


class TbflowAgentHarness(HostHarness):
    """tbflow's reference host-side agent (docs/harnesses.md)."""

    name = "tbflow-agent"
    version = __version__
    kind = "model"
    wire_api = "openai-chat"
    event_log_name = EVENT_LOG

    def prepare(self, task: Task) -> PreparedHarness:
        return PreparedHarness(name=self.name, version=self.version, kind=self.kind)

    def run(self, session: AgentSession) -> None:
        log = EventLog(session.logs_dir / EVENT_LOG)
        log.write("start", model=session.model.model if session.model else None,
                  seconds_left=round(session.remaining(), 1))
        reason = "raised"
        try:
            reason = run_loop(session, log)
        finally:
            log.write("end", reason=reason)
            log.close()

    def parse_usage(self, agent_dir: Path) -> Usage | None:
        return usage_of(agent_dir)

    def error_line(self, agent_dir: Path) -> str | None:
        return error_of(agent_dir)

    def adapter_sources(self) -> list[Path]:
        """The whole package and the contract it implements: the job identity covers them."""
        return [Path(__file__).resolve().parent, Path(inspect.getfile(host_agent_api)).resolve(),
                Path(inspect.getfile(harness_api)).resolve()]
