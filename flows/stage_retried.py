"""A stage whose failure the trial will retry ends its task run ``Retried`` (type CANCELLED),
not ``Failed``: the Prefect UI's filters select state *types*, and a user filtering on ``Failed``
to find what needs attention saw every retried try of a stage (an image build that failed twice
and then succeeded: two red rows for a scored trial; issue 31).

Why CANCELLED: it is grey and is neither ``Failed`` nor ``Crashed``, the two filters that mean
"look here", and it is final. ``Completed`` (green) would say the try worked; a SCHEDULED
``AwaitingRetry`` would be a run that never ends (the stage's next try is a new task run, started
by the trial's retry). The state message says it is retried and why, on one line.

How (Prefect 3.9.1, ``task_engine.py``): a task body that returns a ``State`` ends its run in
that state, and the call returns the state instead of raising, so the trial's side unwraps it
with ``outcome``, which raises the exception the state holds (``State.result()`` raises the
exception in a CANCELLED state's data) and the trial's ``except`` path runs as for a failed
stage. A non-failed stage run is rolled back (renamed a ``Completed`` ``RolledBack``) when the
trial's try then fails; a ``Retried`` run commits its own transaction at once so that it stays
what it is. The retries left reach the stage through a context variable the trial sets: Prefect
runs a task called inside a task in the caller's thread and context.

The decision is the trial's verdict table's (``tasks_lib/trial/trial_verdict.py``, read down to
its retry row), the same the trial takes with the same inputs: for a stage after the agent stage
(kill-process-groups, run-verifier) whether the agent broke its own container is Docker's
evidence, read once by the trial's ``agents_doing`` for both.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar

from prefect.states import Cancelled, State
from prefect.transactions import CommitMode, get_transaction

from tasks_lib.text_clean import one_line
from tasks_lib.trial.trial_evidence import AgentsDoing
from tasks_lib.trial.trial_verdict import retried_after

P = ParamSpec("P")
R = TypeVar("R")

#: the state name of a stage's task run in a try that the trial retries
RETRIED = "Retried"

@dataclass(frozen=True)
class _Try:
    retries_left: int
    agents_doing: AgentsDoing


#: the running trial's try; None outside a trial (a stage is never ``Retried`` then)
_TRY: ContextVar[_Try | None] = ContextVar("tbflow_trial_try", default=None)


@contextmanager
def trial_try(retries_left: int, agents_doing: AgentsDoing) -> Iterator[None]:
    """The stages run inside this block decide as their trial will: with its retries left and its
    reading of what the agent did (``agents_doing``, memoized by the trial)."""
    token = _TRY.set(_Try(retries_left, agents_doing))
    try:
        yield
    finally:
        _TRY.reset(token)


def ends_retried(agent_returned: bool) -> Callable[[Callable[P, R]], Callable[P, R | State[Any]]]:
    """The body of a stage that runs before (``agent_returned=False``) or after the agent stage:
    a failure the trial will retry ends it ``Retried`` (returned as a state), any other is raised."""

    def wrap(stage: Callable[P, R]) -> Callable[P, R | State[Any]]:
        @functools.wraps(stage)
        def body(*args: P.args, **kwargs: P.kwargs) -> R | State[Any]:
            try:
                return stage(*args, **kwargs)
            except Exception as exc:
                this_try = _TRY.get()
                if this_try is None or not retried_after(exc, this_try.retries_left, agent_returned, this_try.agents_doing):
                    raise
                return retried_state(exc, this_try.retries_left)

        return body

    return wrap


def retried_state(exc: Exception, retries_left: int) -> State[Any]:
    """The ``Retried`` state of a stage that failed with ``exc``; its transaction commits now, so
    the failed try's rollback leaves it as it is."""
    txn = get_transaction()
    if txn is not None:
        txn.commit_mode = CommitMode.EAGER
    left = f"{retries_left} {'retry' if retries_left == 1 else 'retries'} left"
    return Cancelled(name=RETRIED, message=one_line(f"retried ({left}): {exc}", 1000), data=exc)


def outcome(result: R | State[Any]) -> R:
    """A stage's result, or the exception of a ``Retried`` stage raised, as if the stage had."""
    if isinstance(result, State):
        result.result()  # raises the exception the state holds
        raise RuntimeError(f"a stage returned a state without an exception: {result!r}")
    return result
