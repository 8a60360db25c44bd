"""What an exception out of a trial's stages is, as evidence for the trial's verdict: one table,
read top to bottom.

A stage that fails raises; the trial must still end with a record that says whose failure it was
(docs/architecture.md, "Validity rules"): the harness's (its setup, or a plug-in's own bug, whose
traceback is the evidence), the environment's (a build, a container, the Docker API; ``retryable``
when a new try may mend it), or tbflow's own bug (``internal``: the traceback in ``error.txt``,
never booked as the environment's). Which of those the trial's verdict is, and whether it is
retried, is the trial's verdict table's (``trial_verdict.py``); this table only types the
exception (``cause`` names its row, so the table can tell a failure tbflow named from a raw Docker
API error). Two exceptions are not outcomes and are raised on: a stop (``Interrupted``: the trial
is left without a record, so a resume runs it) and a full disk (nothing can be recorded; the job
stops, flows/job_flow.py).

``typed_failure`` is pure (a stage asks it for its own retry decision without writing anything);
``stage_failure`` is the trial's, and also keeps the traceback a harness's or tbflow's bug left.
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
    """The record's side of a failed stage: the error, whether a new try may help, and which row of
    ``FAILURES`` typed it (``environment``: an ``EnvironmentFailure`` tbflow raised by name)."""

    error: StageError
    retryable: bool = False
    cause: str = ""


def _plugin_bug(exc: BaseException) -> StageFailure:
    assert isinstance(exc, HarnessPluginError)
    return StageFailure(StageError(stage=exc.stage, kind="harness", message=exc.detail, evidence=PLUGIN_TRACEBACK))


def _harness_setup(exc: BaseException) -> StageFailure:
    assert isinstance(exc, HarnessSetupError)
    return StageFailure(StageError(stage="prepare-harness", kind="harness", message=exc.detail))


def retryable(exc: BaseException) -> bool:
    """Whether a new try may mend ``exc`` (the ``retryable`` of the rows below): an environment
    failure that says so, or any Docker API error; never a stop, a full disk, a harness's failure
    or tbflow's own bug. The trial's verdict table reads it (``trial_verdict.py``)."""
    if isinstance(exc, Interrupted) or disk_full(exc) or isinstance(exc, HarnessSetupError):
        return False
    if isinstance(exc, EnvironmentFailure):
        return exc.retryable
    return isinstance(exc, DOCKER_ERRORS)


def _environment(exc: BaseException) -> StageFailure:
    assert isinstance(exc, EnvironmentFailure)
    return StageFailure(StageError(stage=exc.stage, kind="environment", message=exc.message, evidence=exc.evidence),
                        retryable=retryable(exc))


def _docker_api(exc: BaseException) -> StageFailure:
    return StageFailure(StageError(stage="docker", kind="environment", message=f"Docker engine error: {exc}"),
                        retryable=retryable(exc))


def _tbflow_bug(exc: BaseException) -> StageFailure:
    return StageFailure(StageError(stage="tbflow", kind="internal", evidence=TBFLOW_TRACEBACK,
                                   message=f"{type(exc).__name__}: {exc}"))


#: exception type -> its cause and outcome; the first row that matches decides (a plug-in's bug
#: before the harness setup it is a kind of, tbflow's own bug last)
FAILURES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str,
                      Callable[[BaseException], StageFailure]], ...] = (
    (HarnessPluginError, "plugin-bug", _plugin_bug),
    (HarnessSetupError, "harness-setup", _harness_setup),
    (EnvironmentFailure, "environment", _environment),
    (DOCKER_ERRORS, "docker-api", _docker_api),
    (Exception, "tbflow-bug", _tbflow_bug),
)


def _plugin_traceback(exc: BaseException) -> str:
    assert isinstance(exc, HarnessPluginError)
    return exc.traceback_text


def _own_traceback(exc: BaseException) -> str:
    return "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))


#: cause -> (the trial dir's file, its text): the traceback a bug left, kept as the record's evidence
TRACEBACKS: dict[str, tuple[str, Callable[[BaseException], str]]] = {
    "plugin-bug": (PLUGIN_TRACEBACK, _plugin_traceback),
    "tbflow-bug": (TBFLOW_TRACEBACK, _own_traceback),
}


def typed_failure(exc: BaseException) -> StageFailure | None:
    """The outcome of ``exc`` raised by a stage (pure), or None when it is not an outcome (a stop,
    a full disk, or not an ``Exception`` at all)."""
    if isinstance(exc, Interrupted) or disk_full(exc) or not isinstance(exc, Exception):
        return None
    for kind, cause, outcome in FAILURES:
        if isinstance(exc, kind):
            failure = outcome(exc)
            return StageFailure(failure.error, failure.retryable, cause)
    return None  # unreachable: the last row matches every Exception


def stage_failure(exc: BaseException, trial_dir: Path) -> StageFailure:
    """The outcome of ``exc`` raised by a stage of the trial in ``trial_dir``, its traceback kept
    there when it is a bug's; raises ``exc`` again when it is not an outcome."""
    failure = typed_failure(exc)
    if failure is None:
        raise exc
    if failure.cause in TRACEBACKS:
        name, text = TRACEBACKS[failure.cause]
        (trial_dir / name).write_text(text(exc), encoding="utf-8")
    return failure
