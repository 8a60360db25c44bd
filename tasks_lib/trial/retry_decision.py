"""Whether a stage's exception makes its trial try again: one decision, taken by the trial
(``flows/trial_flow.py``: ``_note_failure`` and ``_finish``) and by the stage's own task run, which
ends ``Retried`` instead of ``Failed`` when the trial will retry it (``flows/stage_retried.py``).
Pure: the exception, the retries left and whether the agent stage has returned are all it needs,
so the stage and the trial cannot disagree.

Three questions, in the order the trial asks them:

1. ``agent_may_own``: an environment failure once the agent stage has returned may be the agent's
   doing (it stopped its own container); Docker's evidence decides (``container_health``), and
   then it is the agent's result, recorded and never retried.
2. ``trial_retries``: otherwise the trial is retried when a new try may mend the failure
   (``stage_failures.retryable``) and ``--env-retries`` are left.
3. ``retried_for_certain``: what a stage knows at its end. Only before the agent stage has
   returned (prepare-harness, build-image, run-agent) is question 1 settled without evidence;
   after it (kill-process-groups, run-verifier) a stage cannot know and says no.
"""

from __future__ import annotations

from tasks_lib.errors import EnvironmentFailure
from tasks_lib.trial.stage_failures import retryable


def agent_may_own(exc: BaseException, agent_returned: bool) -> bool:
    """True when ``exc`` may be the agent's own result: an environment failure after the agent ran."""
    return agent_returned and isinstance(exc, EnvironmentFailure)


def trial_retries(exc: BaseException, retries_left: int) -> bool:
    """True when a failure that is not the agent's makes the trial try again."""
    return retries_left > 0 and retryable(exc)


def retried_for_certain(exc: BaseException, retries_left: int, agent_returned: bool) -> bool:
    """True when the trial will retry after ``exc`` whatever Docker's evidence says (a stop of the
    whole job aside, which leaves the trial unrecorded for a resume to run it again)."""
    return trial_retries(exc, retries_left) and not agent_may_own(exc, agent_returned)
