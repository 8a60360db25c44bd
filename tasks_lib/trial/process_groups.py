"""kill-process-groups: decide what of the agent may still run while the verifier checks.

Two cases, because Terminal-Bench verifiers check services the agent left running (solutions
start servers with ``&``), while work that was cut off must not keep changing what is verified:

* cut off (timeout): every process in the agent's session(s) and their descendants is killed —
  the harness, its in-flight tool commands and their ``&`` jobs. Only daemons that detached
  themselves (own session, re-parented away from the agent) survive.
* finished by itself: nothing is killed.

Either way the record lists what was left running, so a reader can see what the verifier ran
next to. That list comes from tbflow's judge, which takes it just before ``test.sh``
starts; when nothing is killed this stage therefore needs no exec of its own (~70 ms a trial).
"""

from __future__ import annotations

from tasks_lib.errors import ContainerError
from tasks_lib.container.container_outcomes import ProcessInfo
from tasks_lib.records.record_models import AgentOutcome, KillOutcome
from tasks_lib.container.sandbox import Sandbox

STAGE = "kill-process-groups"


def kill_process_groups(sandbox: Sandbox, agent: AgentOutcome, killed_at_deadline: list[ProcessInfo],
                        sessions: list[int]) -> KillOutcome:
    """A judge that cannot finish the kill (stopped, killed, the container's pids limit reached)
    is the agent's doing — it is root in there and tbflow's tool comes from a read-only volume —
    so the trial goes on to its verifier with the problem recorded, never as invalid."""
    cut_off = agent.timed_out
    if cut_off:
        try:
            killed, left = sandbox.processes(STAGE, sessions)
        except ContainerError as exc:
            return KillOutcome(cut_off=True, killed=killed_at_deadline, problem=exc.message)
        return KillOutcome(cut_off=True, killed=killed_at_deadline + killed, left_running=left)
    return KillOutcome(cut_off=False)
