"""What an exception out of a trial's stages means for its record: one table, read top to bottom.

A stage that fails raises; the trial must still end with a record that says whose failure it was
(docs/architecture.md, "Validity rules"): the harness's (its setup, or a plug-in's own bug, whose
traceback is the evidence), the environment's (a build, a container, the Docker API; retried when
``retryable``), or tbflow's own bug (``internal``: the traceback in ``error.txt``, never booked as
the environment's). Two exceptions are not outcomes and are raised on: a stop (``Interrupted``:
the trial is left without a record, so a resume runs it) and a full disk (nothing can be
recorded; the job stops, flows/job_flow.py).
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tasks_lib.container.docker_client import DOCKER_ERRORS
from tasks_lib.errors import PLUGIN_TRACEBACK, EnvironmentFailure, HarnessPluginError, HarnessSetupError, disk_full
from tasks_lib.interrupts import Interrupted
from tasks_lib.records.record_models import StageError

#: the file in a trial dir holding the traceback of a tbflow bug
TBFLOW_TRACEBACK = "error.txt"


@dataclass(frozen=True)
class StageFailure:
    """The record's side of a failed stage: the error, and whether a new try may help."""

    error: StageError
    retryable: bool = False


def _plugin_bug(exc: BaseException, trial_dir: Path) -> StageFailure:
    assert isinstance(exc, HarnessPluginError)
    (trial_dir / PLUGIN_TRACEBACK).write_text(exc.traceback_text, encoding="utf-8")
    return StageFailure(StageError(stage=exc.stage, kind="harness", message=exc.detail, evidence=PLUGIN_TRACEBACK))


def _harness_setup(exc: BaseException, trial_dir: Path) -> StageFailure:
    assert isinstance(exc, HarnessSetupError)
    return StageFailure(StageError(stage="prepare-harness", kind="harness", message=exc.detail))


def retryable(exc: BaseException) -> bool:
    """Whether a new try may mend ``exc`` (the ``retryable`` of the rows below): an environment
    failure that says so, or any Docker API error; never a stop, a full disk, a harness's failure
    or tbflow's own bug. The trial's retry decision reads this (``retry_decision.py``)."""
    if isinstance(exc, Interrupted) or disk_full(exc) or isinstance(exc, HarnessSetupError):
        return False
    if isinstance(exc, EnvironmentFailure):
        return exc.retryable
    return isinstance(exc, DOCKER_ERRORS)


def _environment(exc: BaseException, trial_dir: Path) -> StageFailure:
    assert isinstance(exc, EnvironmentFailure)
    return StageFailure(StageError(stage=exc.stage, kind="environment", message=exc.message, evidence=exc.evidence),
                        retryable=retryable(exc))


def _docker_api(exc: BaseException, trial_dir: Path) -> StageFailure:
    return StageFailure(StageError(stage="docker", kind="environment", message=f"Docker engine error: {exc}"),
                        retryable=retryable(exc))


def _tbflow_bug(exc: BaseException, trial_dir: Path) -> StageFailure:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    (trial_dir / TBFLOW_TRACEBACK).write_text(text, encoding="utf-8")
    return StageFailure(StageError(stage="tbflow", kind="internal", evidence=TBFLOW_TRACEBACK,
                                   message=f"{type(exc).__name__}: {exc}"))


#: exception type -> its outcome; the first row that matches decides (a plug-in's bug before the
#: harness setup it is a kind of, tbflow's own bug last)
FAILURES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...],
                      Callable[[BaseException, Path], StageFailure]], ...] = (
    (HarnessPluginError, _plugin_bug),
    (HarnessSetupError, _harness_setup),
    (EnvironmentFailure, _environment),
    (DOCKER_ERRORS, _docker_api),
    (Exception, _tbflow_bug),
)


def stage_failure(exc: BaseException, trial_dir: Path) -> StageFailure:
    """The outcome of ``exc`` raised by a stage of the trial in ``trial_dir``; raises ``exc`` again
    when it is not an outcome (a stop, a full disk, or not an ``Exception`` at all)."""
    if isinstance(exc, Interrupted) or disk_full(exc) or not isinstance(exc, Exception):
        raise exc
    for kind, outcome in FAILURES:
        if isinstance(exc, kind):
            return outcome(exc, trial_dir)
    raise exc  # unreachable: the last row matches every Exception
