"""``host-replay``: a host-side reference harness, the smallest loop of docs/write-a-harness.md
("Host-side agents").

Its loop runs on the host, in tbflow's process, and acts in the container only through
``session.env``: it uploads the task's ``solution/`` and runs ``solve.sh`` there, one command,
writing an event per step to its log as it goes. tbflow owns the rest (the deadline, the kill of
the command's session, the verdict). A model agent would do the same with ``session.model``
between the commands.
"""

from __future__ import annotations

import json
import time

from tasks_lib.errors import HarnessSetupError
from tasks_lib.task.task_model import Task
from tasks_lib.trial.harness_api import PreparedHarness
from tasks_lib.trial.host_agent_api import AgentSession, HostHarness


class HostReplayHarness(HostHarness):
    """Uploads ``solution/`` to ``/solution`` and runs ``bash /solution/solve.sh`` in the container."""

    name = "host-replay"
    version = "0.1.0"
    kind = "reference"

    def prepare(self, task: Task) -> PreparedHarness:
        if not (task.solution_dir / "solve.sh").is_file():
            raise HarnessSetupError(f"{task.name} has no solution/solve.sh to replay")
        return PreparedHarness(name=self.name, version=self.version, kind=self.kind)

    def run(self, session: AgentSession) -> None:
        with (session.logs_dir / self.event_log_name).open("a", encoding="utf-8") as log:
            def event(kind: str, **data) -> None:
                log.write(json.dumps({"t": round(time.time(), 3), "event": kind, **data}) + "\n")
                log.flush()  # a trial cut off later still has every event before the cut

            event("start", task=session.task.name, remaining_sec=round(session.remaining(), 1))
            session.env.upload(session.task.solution_dir, "/solution")
            env = {"DEBIAN_FRONTEND": "noninteractive", **session.task.config.solution.env}
            out = session.env.exec("bash /solution/solve.sh", env=env)
            event("exec", command="bash /solution/solve.sh", exit_code=out.exit_code, timed_out=out.timed_out,
                  output=out.output[-2000:], error=out.error)
            event("end")
