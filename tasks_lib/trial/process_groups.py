"""kill-process-groups: decide what of the agent may still run while the verifier checks.

Two cases, because Terminal-Bench verifiers check services the agent left running (solutions
start servers with ``&``), while work that was cut off must not keep changing what is verified:

* cut off (timeout): every process in the agent's session(s) and their descendants is killed —
  the harness, its in-flight tool commands and their ``&`` jobs. Only daemons that detached
  themselves (own session, re-parented away from the agent) survive.
* finished by itself: nothing is killed.

Either way the record lists what was left running, so a reader can see what the verifier ran
next to. That list comes from the verifier wrapper, which takes it just before ``test.sh``
starts; when nothing is killed this stage therefore needs no exec of its own (~70 ms a trial).
"""

from __future__ import annotations

from tasks_lib.container.container_scripts import AGENT_SID_GLOB
from tasks_lib.job.records import AgentOutcome, KillOutcome, ProcessInfo
from tasks_lib.container.sandbox import Sandbox

STAGE = "kill-process-groups"


def kill_process_groups(sandbox: Sandbox, agent: AgentOutcome, killed_at_deadline: list[ProcessInfo]) -> KillOutcome:
    cut_off = agent.timed_out
    if cut_off:
        killed, left = sandbox.processes(STAGE, [AGENT_SID_GLOB])
        killed = killed_at_deadline + killed
        return KillOutcome(cut_off=True, killed=killed, left_running=left)
    return KillOutcome(cut_off=False)
