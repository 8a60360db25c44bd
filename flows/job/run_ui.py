"""What the Prefect UI shows about a job: tags, a live progress artifact, and readable log text.

The files in the job directory are the product; this is a view of them on the job's own flow
run (docs/prefect.md). Every call here talks to the Prefect API and a hiccup must never
fail a job whose trials are fine, so each one logs a warning instead of raising.
"""

from __future__ import annotations

import ast
import logging
import re
import time
from pathlib import Path
from uuid import UUID

from prefect.artifacts import create_progress_artifact, update_progress_artifact
from prefect.context import FlowRunContext
from prefect.states import Failed

from flows.job.job_plan import JobPlan
from flows.job.latest_sender import LatestSender
from flows.stage_retried import RETRIED
from tasks_lib import interrupts
from tasks_lib.job.eta import TrialClock
from tasks_lib.records.record_models import TrialRecord
from tasks_lib.text_clean import clean_text, one_line


def readable(text: str) -> str:
    """Log text without terminal colour codes, control characters or trailing blank lines."""
    return clean_text(text).rstrip()


def _tag_value(value: str) -> str:
    return re.sub(r"\s+", "-", value.strip())[:100] or "-"


def job_tags(p: JobPlan) -> list[str]:
    """Tags for the job's flow run and every trial's task run: job, dataset, harnesses, model."""
    out = [f"job:{_tag_value(p.job_dir.name)}", f"dataset:{_tag_value(Path(p.config.dataset).resolve().name)}"]
    out += [f"harness:{h}" for h in p.harness_refs]
    if p.config.model:
        out.append(f"model:{_tag_value(p.config.model)}")
    return out


def tag_flow_run(tags: list[str], logger, name: str | None = None) -> None:
    """Add ``tags`` to the running flow run (its own tags, e.g. a deployment's, are kept), and
    name it ``name`` (the job's, once an unnamed job's directory is chosen)."""
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return
    try:
        from prefect.client.orchestration import get_client

        merged = sorted(set(ctx.flow_run.tags or []) | set(tags))
        ctx.flow_run.tags = merged  # a later call adds to these
        with get_client(sync_client=True) as client:
            client.update_flow_run(ctx.flow_run.id, tags=merged, name=name)  # None: the name is kept
    except Exception as exc:  # noqa: BLE001 - a view; the job goes on
        logger.warning("could not tag the flow run: %s", readable(str(exc)))


class _RefusalTracebackFilter(logging.Filter):
    """Drops the traceback Prefect's engine logs for every failed flow run ("Engine execution
    exited with unexpected exception") when the failure is a refusal of bad input: the run's own
    one-line error already says what is wrong, and a traceback would read as a tbflow crash."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        return not (exc is not None and getattr(exc, "tbflow_refusal", False))


_refusal_filter = _RefusalTracebackFilter()


_FINISHED = re.compile(r"^Finished in state (?P<name>[^(]+)\((?P<message>'.*'|\".*\")?(?:, type=\w+)?\)$", re.S)
#: the engine's line for a Failed state a task with retries returned on its last try: the trial's
#: Invalid after its environment retries, as a raw repr with the whole record (and "NoneType: None")
_EXHAUSTED = re.compile(r"^Task run failed with state: .* - Retries are exhausted$", re.S)


def readable_finish(message: str) -> str | None:
    """Prefect's ``Finished in state Invalid('invalid: verifier: ...', type=FAILED)`` (a Python
    repr, quotes and escapes included) as text: ``Finished Invalid: invalid: verifier: ...``;
    None for any other line."""
    m = _FINISHED.match(message)
    if m is None:
        return None
    try:
        text = ast.literal_eval(m["message"]) if m["message"] else ""
    except (ValueError, SyntaxError):
        return None
    return f"Finished {m['name']}: {text}" if text else f"Finished {m['name']}"


class _ReadableFinishFilter(logging.Filter):
    """Rewrites the task engine's last line of each task run (issue 31: an invalid trial's read as
    a raw Python record in the UI's log). The engine logs every end but Completed as an ERROR; a
    stage's try that the trial retries (``Retried``, flows/stage_retried.py) is no error: INFO.
    The engine's "Retries are exhausted" line for a returned Failed state is dropped: the
    ``Finished Invalid: ...`` line right after it says the same as text."""

    def filter(self, record: logging.LogRecord) -> bool:
        if _EXHAUSTED.match(record.getMessage()):
            return False
        text = readable_finish(record.getMessage())
        if text is not None:
            record.msg, record.args = text, ()
            if text.startswith(f"Finished {RETRIED}:"):
                record.levelno, record.levelname = logging.INFO, logging.getLevelName(logging.INFO)
        return True


_finish_filter = _ReadableFinishFilter()


def readable_task_run_logs() -> None:
    """Install the rewrite on Prefect's task-run logger (once per process)."""
    engine_logger = logging.getLogger("prefect.task_runs")
    if _finish_filter not in engine_logger.filters:
        engine_logger.addFilter(_finish_filter)


#: the name of a refused run's Failed state: the UI shows it, and a job's coordinator tells a refused
#: shard (the same input would be refused again: not re-run) from a lost one (flows/coordinator.py)
REFUSED = "Refused"


def refused(logger, exc: Exception, message: str):
    """A one-line Failed state named ``Refused`` for input a run cannot go on with (no traceback:
    nothing broke); the log line keeps the message's line breaks.

    The exception stays the state's data, so a Python caller of the flow gets it raised.
    """
    message = readable(message)
    logger.error("tbflow: %s", message)
    exc.tbflow_refusal = True  # type: ignore[attr-defined]
    engine_logger = logging.getLogger("prefect.flow_runs")
    if _refusal_filter not in engine_logger.filters:
        engine_logger.addFilter(_refusal_filter)
    return Failed(name=REFUSED, message=one_line(message) or type(exc).__name__, data=exc)


#: the progress artifact is sent at most this often (the newest state; the last one at the job's end)
PROGRESS_EVERY_SEC = 1.0


class ProgressArtifact:
    """A progress artifact on the job's flow run, updated as each trial starts and finishes.

    Its description says ``done/total`` and how many were scored, invalid and flagged (of this job,
    counting trials recorded by earlier runs), the ETA and which trials run now
    (``tasks_lib/job/eta.py``).
    """

    def __init__(self, key: str, logger) -> None:
        self.key = key
        self.log = logger
        self.id: UUID | None = None
        self.scored = self.invalid = self.flagged = 0
        self.done = self.total = 0
        self.clock = TrialClock()
        #: updates go out on a thread of their own, newest only (flows/job/latest_sender.py)
        self.sender: LatestSender[tuple[float, str]] | None = None

    def _text(self, done: int, total: int) -> str:
        text = f"{done}/{total} trials done: {self.scored} scored, {self.invalid} invalid, {self.flagged} flagged"
        now = self.clock.describe(time.monotonic()) if done < total else ""
        return f"{text}; {now}" if now else text

    def count(self, records: list[TrialRecord]) -> None:
        for r in records:
            self._add(r)

    def _add(self, record: TrialRecord) -> None:
        if record.validity.status == "scored":
            self.scored += 1
        else:
            self.invalid += 1
        self.flagged += bool(record.flags)

    def job_started(self, job_dir: str, total: int, already_done: int) -> None:
        self.done, self.total = already_done, total
        try:
            self.id = create_progress_artifact(  # type: ignore[assignment]  # called from sync code: a UUID
                progress=_pct(already_done, total), key=self.key, description=self._text(already_done, total))
        except Exception as exc:  # noqa: BLE001
            self.log.warning("could not create the progress artifact: %s", readable(str(exc)))
            return
        self.sender = LatestSender(self._send, name="tbflow-progress-artifact", min_interval=PROGRESS_EVERY_SEC)

    def trial_started(self, trial_id: str) -> None:
        self.clock.started(trial_id, time.monotonic())
        self._update()

    def trial_finished(self, record: TrialRecord, done: int, total: int) -> None:
        self._add(record)
        self.clock.ended(record.trial_id, time.monotonic())
        self.done, self.total = done, total
        self._update()

    def _update(self) -> None:
        if self.sender is not None:
            self.sender.put((_pct(self.done, self.total), self._text(self.done, self.total)))

    def _send(self, update: tuple[float, str]) -> None:
        if self.id is None:  # never: the sender starts once the artifact exists
            return
        try:
            update_progress_artifact(self.id, progress=update[0], description=update[1])
        except Exception as exc:  # noqa: BLE001
            self.log.warning("could not update the progress artifact: %s", readable(str(exc)))

    def flush(self) -> None:
        """Wait until the newest progress was sent (the job's end, a test reading it back)."""
        if self.sender is not None:
            self.sender.flush()

    def order_planned(self, order) -> None:
        self.clock.planned(order)

    def trial_interrupted(self, trial_id: str, message: str) -> None:
        self.clock.ended(trial_id, time.monotonic())

    def job_finished(self) -> None:
        if self.sender is not None:  # a stopping job does not wait long for a server that may be gone
            self.sender.close(timeout=2.0 if interrupts.stopping() else 30.0)
            self.sender = None


def _pct(done: int, total: int) -> float:
    return round(100.0 * done / total, 1) if total else 100.0


class Fanout:
    """One progress listener that forwards every event to several."""

    def __init__(self, *listeners) -> None:
        self.listeners = [x for x in listeners if x is not None]

    def __getattr__(self, name: str):
        def call(*args, **kw):
            for listener in self.listeners:
                getattr(listener, name)(*args, **kw)
        return call
