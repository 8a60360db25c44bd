"""``replay``: a reference harness that runs each task's own solution through a shell command.

It reuses tbflow's oracle for the part that is the same (``prepare`` uploads the task's
``solution/`` to ``/solution``, and refuses a task without one: invalid: harness) and says only
what differs: its name and version, and the command. tbflow owns everything else (the container,
the deadline, the kill before the verifier, the logs, the verdict), as for every harness.
"""

from __future__ import annotations

from harnesses.reference import OracleHarness
from tasks_lib.task.task_model import Task
from tasks_lib.trial.harness_api import AgentCommand, ModelAccess, PreparedHarness


class ReplayHarness(OracleHarness):
    """Runs ``bash /solution/solve.sh`` after a line of its own; its output is ``agent/replay.txt``."""

    name = "replay"
    version = "0.1.0"
    kind = "reference"

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None = None) -> AgentCommand:
        script = 'echo "replay: running the solution of $TBFLOW_TASK"; exec bash /solution/solve.sh'
        env = {"DEBIAN_FRONTEND": "noninteractive", **task.config.solution.env, "TBFLOW_TASK": task.name}
        return AgentCommand(argv=["bash", "-c", script], env=env, stdout_name="replay.txt")
