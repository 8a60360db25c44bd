"""Progress of a running job, for whoever is watching.

The job flow reports each finished trial here: always to the Prefect run logger (visible in the
UI and in a worker's output) and the job's progress artifact, and to a listener the caller
installed (the CLI's Rich progress bar).
A listener lives in-process because flow parameters must stay plain data for deployments.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Protocol

from tasks_lib.store.remote_store import mirror_for
from tasks_lib.records.record_models import TrialOrder, TrialRecord
from tasks_lib.job.trial_order import describe_order
from tasks_lib.text_clean import visible


class ProgressListener(Protocol):
    def job_started(self, job_dir: str, total: int, already_done: int) -> None: ...
    def order_planned(self, order: TrialOrder) -> None: ...
    def trial_started(self, trial_id: str) -> None: ...
    def trial_finished(self, record: TrialRecord, done: int, total: int) -> None: ...
    def trial_interrupted(self, trial_id: str, message: str) -> None: ...
    def job_finished(self) -> None: ...


def location(job_dir: str | Path) -> str:
    """Where a job lives, as a person on another machine needs it: ``host:/absolute/path``, or
    for a job in a store its URL and this machine's working copy."""
    if (mirror := mirror_for(job_dir)) is not None:
        return mirror.describe(Path(job_dir))
    return f"{socket.gethostname()}:{Path(job_dir).resolve()}"


def describe(record: TrialRecord) -> str:
    """One line per finished trial, for the terminal and the run log. Reasons and flag messages
    come from the container: shown with ``visible`` escapes (line breaks too), so an ``ESC]52``
    in a leftover command line cannot write the operator's clipboard nor a newline forge a line."""
    v, spec = record.validity, record.spec
    reason = visible((v.reason or "").strip())
    verdict = (f"scored {v.reward:g}" if v.status == "scored" else f"invalid: {v.kind} ({reason})"
               if v.status == "invalid" else f"tbflow error ({reason})")
    if record.flags:
        verdict += " [flagged: " + "; ".join(f"{f.kind}: {visible(f.message)}" for f in record.flags) + "]"
    return f"{visible(spec.task_name)} {visible(spec.harness)}#{spec.attempt}: {verdict} [{record.duration_sec:.1f}s]"


class LogListener:
    """Default listener: one log line per trial through Prefect's run logger."""

    def __init__(self, logger) -> None:
        self.log = logger

    def job_started(self, job_dir: str, total: int, already_done: int) -> None:
        self.log.info("job %s: %d trials (%d already recorded)", location(job_dir), total, already_done)

    def order_planned(self, order: TrialOrder) -> None:
        self.log.info("%s", "\n".join(describe_order(order)))

    def trial_started(self, trial_id: str) -> None:
        """The run's log has the start of each trial's task run already."""

    def trial_finished(self, record: TrialRecord, done: int, total: int) -> None:
        self.log.info("[%d/%d] %s", done, total, describe(record))

    def trial_interrupted(self, trial_id: str, message: str) -> None:
        self.log.warning("%s: not recorded (%s)", trial_id, visible(message.strip()))

    def job_finished(self) -> None:
        pass


_listener: ProgressListener | None = None


def set_listener(listener: ProgressListener | None) -> None:
    global _listener
    _listener = listener


def installed_listener() -> ProgressListener | None:
    return _listener
