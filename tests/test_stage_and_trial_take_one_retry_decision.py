"""A stage ends ``Retried`` (not Failed) only when its trial will retry, so the two must take one
decision (the trial's verdict table down to its retry row, tasks_lib/trial/trial_verdict.py): if they diverged, a stage would read "retried" for a
try that was recorded invalid, or a retried try would be red again. Pure, without Docker or a
Prefect server."""

import errno

import pytest
import requests
from docker.errors import APIError

from flows.stage_retried import RETRIED, ends_retried, outcome, trial_try
from tasks_lib.errors import (ContainerError, HarnessPluginError, HarnessSetupError, ImageBuildError,
                              UnsafeArchiveError)
from tasks_lib.interrupts import Interrupted
from tasks_lib.trial.container_health import MissingInterpreter
from tasks_lib.trial.stage_failures import retryable, stage_failure, typed_failure
from tasks_lib.trial.trial_evidence import failure_may_be_agents
from tasks_lib.trial.trial_verdict import retried_after as retried


def agent_may_own(exc: BaseException, agent_returned: bool) -> bool:
    return failure_may_be_agents(typed_failure(exc), agent_returned)


def _not_retryable_build() -> ImageBuildError:
    error = ImageBuildError("build-image", "docker build timed out")
    error.retryable = False
    return error


RETRYABLE = [ImageBuildError("build-image", "docker build failed"), ContainerError("run-agent", "no start"),
             APIError("500 Server Error"), requests.ConnectionError("engine restarting")]
NOT_RETRYABLE = [_not_retryable_build(), UnsafeArchiveError("run-verifier", "a link out"),
                 MissingInterpreter("run-verifier", "no bash"), HarnessSetupError("prepare-harness", "no bundle"),
                 HarnessPluginError("run-agent", "plug-in bug", "Traceback"), ValueError("a tbflow bug")]
NOT_OUTCOMES = [Interrupted("stopping"), OSError(errno.ENOSPC, "No space left on device")]


@pytest.mark.parametrize("exc", RETRYABLE + NOT_RETRYABLE, ids=repr)
def test_the_records_retryable_is_the_decisions(exc, tmp_path):
    assert stage_failure(exc, tmp_path).retryable == retryable(exc)


def _never_asked():
    raise AssertionError("Docker's evidence was read for a failure it cannot change")


@pytest.mark.parametrize("exc", RETRYABLE, ids=repr)
def test_a_retryable_failure_before_the_agent_returned_is_retried_while_retries_are_left(exc):
    assert retried(exc, 1, False, _never_asked)
    assert not retried(exc, 0, False, _never_asked)
    assert not retried(exc, 0, True, _never_asked)


@pytest.mark.parametrize("exc", NOT_RETRYABLE + NOT_OUTCOMES, ids=repr)
def test_what_a_new_try_cannot_mend_is_never_retried(exc):
    assert not retried(exc, 2, False, _never_asked)
    assert not retried(exc, 2, True, _never_asked)


def test_an_environment_failure_after_the_agent_returned_is_retried_unless_the_agent_did_it():
    """The agent may have stopped its own container: then it is its result, not retried."""
    exc = ContainerError("run-verifier", "container stopped")
    assert agent_may_own(exc, agent_returned=True) and not agent_may_own(exc, agent_returned=False)
    assert retried(exc, 2, True, lambda: None)
    assert not retried(exc, 2, True, lambda: "broke-container")
    api = APIError("500")  # a Docker API error is never the agent's: the trial retries it wherever it came from
    assert not agent_may_own(api, agent_returned=True) and retried(api, 2, True, _never_asked)


@ends_retried(agent_returned=False)
def _stage(exc: Exception | None) -> str:
    if exc is not None:
        raise exc
    return "done"


@ends_retried(agent_returned=True)
def _late_stage(exc: Exception) -> str:
    raise exc


def test_a_stage_ends_retried_only_while_its_trial_has_retries_left():
    exc = ImageBuildError("build-image", "docker build failed:\nstep 2")
    with trial_try(2, _never_asked):
        state = _stage(exc)
        assert outcome(_stage(None)) == "done"
    assert (state.type.value, state.name) == ("CANCELLED", RETRIED)
    assert state.message == "retried (2 retries left): build-image: docker build failed: step 2"
    with pytest.raises(ImageBuildError) as raised:  # the trial's except path sees the stage's own exception
        outcome(state)
    assert raised.value is exc
    with trial_try(0, _never_asked), pytest.raises(ImageBuildError):
        _stage(exc)
    with pytest.raises(ImageBuildError):  # outside a trial: no retries known, raised as before
        _stage(exc)
    with trial_try(2, _never_asked), pytest.raises(ValueError):
        _stage(ValueError("a tbflow bug"))


def test_a_stage_after_the_agent_asks_the_trials_reading_of_what_the_agent_did():
    exc = ContainerError("run-verifier", "the container stopped")
    with trial_try(1, lambda: None):
        assert _late_stage(exc).name == RETRIED
    with trial_try(1, lambda: "broke-container"), pytest.raises(ContainerError):
        _late_stage(exc)
