"""A stage ends ``Retried`` (not Failed) only when its trial will retry, so the two must take one
decision (tasks_lib/trial/retry_decision.py): if they diverged, a stage would read "retried" for a
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
from tasks_lib.trial.retry_decision import agent_may_own, retried_for_certain, trial_retries
from tasks_lib.trial.stage_failures import retryable, stage_failure


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


@pytest.mark.parametrize("exc", RETRYABLE, ids=repr)
def test_a_retryable_failure_before_the_agent_returned_is_retried_for_certain(exc):
    assert trial_retries(exc, 1) and retried_for_certain(exc, 1, agent_returned=False)
    assert not trial_retries(exc, 0) and not retried_for_certain(exc, 0, agent_returned=False)


@pytest.mark.parametrize("exc", NOT_RETRYABLE + NOT_OUTCOMES, ids=repr)
def test_what_a_new_try_cannot_mend_is_never_retried(exc):
    assert not trial_retries(exc, 2) and not retried_for_certain(exc, 2, agent_returned=False)


def test_an_environment_failure_after_the_agent_returned_is_not_known_at_the_stages_end():
    """It may be the agent's result (it stopped its container): Docker's evidence decides, later."""
    exc = ContainerError("run-verifier", "container stopped")
    assert agent_may_own(exc, agent_returned=True) and not agent_may_own(exc, agent_returned=False)
    assert trial_retries(exc, 2) and not retried_for_certain(exc, 2, agent_returned=True)
    api = APIError("500")  # a Docker API error is never the agent's: the trial retries it wherever it came from
    assert not agent_may_own(api, agent_returned=True) and retried_for_certain(api, 2, agent_returned=True)


@ends_retried
def _stage(exc: Exception | None) -> str:
    if exc is not None:
        raise exc
    return "done"


def test_a_stage_ends_retried_only_while_its_trial_has_retries_left():
    exc = ImageBuildError("build-image", "docker build failed:\nstep 2")
    with trial_try(2):
        state = _stage(exc)
        assert outcome(_stage(None)) == "done"
    assert (state.type.value, state.name) == ("CANCELLED", RETRIED)
    assert state.message == "retried (2 retries left): build-image: docker build failed: step 2"
    with pytest.raises(ImageBuildError) as raised:  # the trial's except path sees the stage's own exception
        outcome(state)
    assert raised.value is exc
    with trial_try(0), pytest.raises(ImageBuildError):
        _stage(exc)
    with pytest.raises(ImageBuildError):  # outside a trial: no retries known, raised as before
        _stage(exc)
    with trial_try(2), pytest.raises(ValueError):
        _stage(ValueError("a tbflow bug"))
