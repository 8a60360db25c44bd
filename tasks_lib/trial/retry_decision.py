"""Whether a stage's exception makes its trial try again: one decision, taken by the trial
(``flows/trial_flow.py``: ``_note_failure`` and ``_finish``) and by the stage's own task run, which
ends ``Retried`` instead of ``Failed`` when the trial will retry it (``flows/stage_retried.py``).
Pure over its inputs, so the stage and the trial cannot disagree: the exception, the retries left,
whether the agent stage has returned, and Docker's evidence of what the agent did, which the trial
reads once per try and hands to both (``agents_doing``).

Two questions, in the order the trial asks them:

1. ``agent_may_own``: an environment failure once the agent stage has returned may be the agent's
   doing (it stopped its own container, or filled its storage); then it is the agent's result,
   recorded and never retried (``container_health``).
2. ``trial_retries``: otherwise the trial is retried when a new try may mend the failure
   (``stage_failures.retryable``) and ``--env-retries`` are left.
"""

from __future__ import annotations

from collections.abc import Callable

from tasks_lib.errors import EnvironmentFailure
from tasks_lib.trial.stage_failures import retryable

#: Docker's evidence that the agent broke its own container (a flag), or None; read at most once
AgentsDoing = Callable[[], object | None]


def agent_may_own(exc: BaseException, agent_returned: bool) -> bool:
    """True when ``exc`` may be the agent's own result: an environment failure after the agent ran."""
    return agent_returned and isinstance(exc, EnvironmentFailure)


def trial_retries(exc: BaseException, retries_left: int) -> bool:
    """True when a failure that is not the agent's makes the trial try again."""
    return retries_left > 0 and retryable(exc)


def retried(exc: BaseException, retries_left: int, agent_returned: bool, agents_doing: AgentsDoing) -> bool:
    """True when the trial tries again after ``exc`` (a stop of the whole job aside, which leaves
    the trial unrecorded for a resume to run it again). ``agents_doing`` is asked only when the
    answer depends on it."""
    if not trial_retries(exc, retries_left):
        return False
    return not agent_may_own(exc, agent_returned) or agents_doing() is None
