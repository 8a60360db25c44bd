"""The reference harnesses: ``oracle`` runs the task's own solution, ``nop`` does nothing.

They calibrate a dataset: oracle should score 1 and nop 0 on every task. A task where that fails
has a broken environment, solution or verifier, whatever any real agent does on it.
"""

from __future__ import annotations

from tasks_lib.trial.harness_api import AgentCommand, Harness, ModelAccess, PreparedHarness, Upload
from tasks_lib.errors import HarnessSetupError
from tasks_lib.task.task_model import Task

from tasks_lib import __version__


class OracleHarness(Harness):
    """Uploads ``solution/`` to ``/solution`` and runs ``bash /solution/solve.sh``."""

    name = "oracle"
    version = __version__
    kind = "reference"

    def prepare(self, task: Task) -> PreparedHarness:
        if not task.has_solution:
            raise HarnessSetupError(f"task {task.name} has no solution/solve.sh for the oracle to run")
        return PreparedHarness(name=self.name, version=self.version, kind=self.kind,
                               uploads=[Upload(source=task.solution_dir, target="/solution")])

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None = None) -> AgentCommand:
        env = {"DEBIAN_FRONTEND": "noninteractive", **task.config.solution.env}
        return AgentCommand(argv=["bash", "/solution/solve.sh"], env=env, stdout_name="oracle.txt")


class NopHarness(Harness):
    """Does nothing, so the verifier sees the untouched task: the floor of every task."""

    name = "nop"
    version = __version__
    kind = "reference"

    def prepare(self, task: Task) -> PreparedHarness:
        return PreparedHarness(name=self.name, version=self.version, kind=self.kind)

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None = None) -> AgentCommand:
        return AgentCommand(argv=["true"], stdout_name="nop.txt")
