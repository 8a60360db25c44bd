"""One table says whose failure an exception out of a trial's stages is
(tasks_lib/trial/stage_failures.py): a plug-in's own bug and a harness that cannot run are the
harness's, a build, container or Docker API failure the environment's (retried when it may help),
any other exception tbflow's own bug, with its traceback kept. A stop and a full disk are not
outcomes: they are raised on, so the trial is left without a record."""

from __future__ import annotations

import errno

import pytest
import requests
from docker.errors import APIError

from tasks_lib.errors import (PLUGIN_TRACEBACK, ContainerError, HarnessPluginError, HarnessSetupError,
                              ImageBuildError)
from tasks_lib.interrupts import Interrupted
from tasks_lib.trial.stage_failures import TBFLOW_TRACEBACK, stage_failure


def test_plugin_bug_is_the_harness_failure_with_its_traceback_as_evidence(tmp_path):
    out = stage_failure(HarnessPluginError("run-agent", "plug-in raised KeyError", "Traceback: KeyError 'x'"), tmp_path)
    assert (out.error.stage, out.error.kind, out.error.evidence) == ("run-agent", "harness", PLUGIN_TRACEBACK)
    assert (tmp_path / PLUGIN_TRACEBACK).read_text() == "Traceback: KeyError 'x'"
    assert not out.retryable


def test_harness_that_cannot_run_is_the_harness_failure_at_prepare(tmp_path):
    out = stage_failure(HarnessSetupError("no solution/solve.sh in the task"), tmp_path)
    assert (out.error.stage, out.error.kind, out.error.message) == ("prepare-harness", "harness",
                                                                    "no solution/solve.sh in the task")


def test_environment_failure_keeps_stage_evidence_and_retryable(tmp_path):
    built = stage_failure(ImageBuildError("build-image", "step 3 failed", "build.log"), tmp_path)
    assert (built.error.stage, built.error.kind, built.error.evidence) == ("build-image", "environment", "build.log")
    assert built.retryable == ImageBuildError.retryable
    container = stage_failure(ContainerError("run-agent", "container vanished"), tmp_path)
    assert (container.error.kind, container.retryable) == ("environment", True)


@pytest.mark.parametrize("exc", [APIError("500 Server Error"), requests.exceptions.ConnectionError("refused")],
                         ids=["docker-api-error", "engine-connection-error"])
def test_docker_api_failure_is_the_environments_and_retried(tmp_path, exc):
    out = stage_failure(exc, tmp_path)
    assert (out.error.stage, out.error.kind, out.retryable) == ("docker", "environment", True)
    assert out.error.message.startswith("Docker engine error: ")


def test_any_other_exception_is_a_tbflow_bug_with_its_traceback(tmp_path):
    try:
        {}["missing"]
    except KeyError as exc:
        out = stage_failure(exc, tmp_path)
    assert (out.error.stage, out.error.kind, out.error.evidence, out.retryable) == ("tbflow", "internal",
                                                                                    TBFLOW_TRACEBACK, False)
    assert out.error.message == "KeyError: 'missing'"
    assert "Traceback" in (tmp_path / TBFLOW_TRACEBACK).read_text()


@pytest.mark.parametrize("exc", [Interrupted("stopping"), OSError(errno.ENOSPC, "No space left on device"),
                                 KeyboardInterrupt()], ids=["stop", "disk-full", "keyboard-interrupt"])
def test_stop_and_full_disk_are_raised_on_not_recorded(tmp_path, exc):
    with pytest.raises(type(exc)):
        stage_failure(exc, tmp_path)
    assert list(tmp_path.iterdir()) == []
