"""The job run's verdict where Prefect can see it, filter on it and alert on it (docs/deployments.md,
"Alerts on invalid trials").

A trial's verdict is already its task run's state (``flows/trial_flow.verdict_state``: an invalid
trial is a red ``Failed`` named ``Invalid``, a flagged one is named ``Flagged``). The job run's own
state says the same for the whole job, its name giving the counts at a glance in the run list:

- every planned trial scored, none flagged: ``Completed``, message ``12 of 12 trials scored``;
  scored but some flagged: ``Completed`` named ``0 invalid, 2 flagged``;
- some invalid, ended by a tbflow error, or without a record (a lost shard past its re-runs): a red
  ``Failed`` named with the counts (``2 invalid, 1 flagged``), the summary as its message: a job
  that needs attention is never a green run like a clean one (issue 31). ``TBFLOW_INVALID_JOB_STATE=
  completed`` in the flow's environment, or a ``fail_on_invalid`` threshold that was not exceeded,
  keeps it ``Completed`` (named ``Not all scored``) instead;
- when the ``fail_on_invalid`` gate trips (the CLI's ``--fail-on-invalid`` semantics,
  ``tasks_lib/report/invalid_gate.py``): ``Failed`` named ``Not all scored``.

The run is tagged too (``tbflow:invalid``, ``tbflow:flagged``: ``attention_tags``), so the UI's tag
filter lists the runs that need a look. And one event per finished job run,
``tbflow.job.all-scored`` or ``tbflow.job.not-all-scored``, whose resource is the job (its counts as
labels) and whose related resources (added by Prefect) are the flow run, its flow, deployment and
tags: what an automation triggers on (``deployments/alert-not-all-scored.yaml``).

Python callers of the flow get the ``JobResult`` back, or ``NotAllScored`` raised (it holds the
result): ``InvalidTrialsGate``, its subclass, when the gate tripped.
"""

from __future__ import annotations

import os

from pydantic import BaseModel
from prefect.states import Completed, Failed, State

from flows.job.job_result import JobResult
from tasks_lib.errors import TbflowError
from tasks_lib.report.invalid_gate import Threshold, check

NOT_ALL_SCORED = "Not all scored"
#: the environment variable that keeps a job with invalid trials ``Completed`` (value ``completed``)
STATE_VARIABLE = "TBFLOW_INVALID_JOB_STATE"
TAG_INVALID = "tbflow:invalid"
TAG_FLAGGED = "tbflow:flagged"
EVENT_ALL_SCORED = "tbflow.job.all-scored"
EVENT_NOT_ALL_SCORED = "tbflow.job.not-all-scored"
PARAMETER = "parameter fail_on_invalid"


class JobVerdict(BaseModel):
    """Counts over the job's planned trials (earlier runs' records included)."""

    job_name: str
    job_id: str
    location: str
    planned: int
    scored: int
    invalid: int
    errors: int
    unrecorded: int
    flagged: int = 0  # scored or not, a trial with flags (tampering, processes left): worth a look
    gate: str | None = None  # the gate's message, when a threshold was given
    tripped: bool = False

    @property
    def all_scored(self) -> bool:
        return self.scored == self.planned

    def summary(self) -> str:
        if self.all_scored:
            return f"{self.scored} of {self.planned} trials scored" + (f", {self.flagged} flagged" if self.flagged else "")
        parts = [f"{self.scored} scored", f"{self.invalid} invalid"]
        if self.errors:
            parts.append(f"{self.errors} tbflow error{'s' if self.errors != 1 else ''}")
        if self.unrecorded:
            parts.append(f"{self.unrecorded} without a record")
        if self.flagged:
            parts.append(f"{self.flagged} flagged")
        return f"{self.planned} trials: " + ", ".join(parts)

    def counts_name(self) -> str:
        """The state name of a job that needs a look: its non-zero counts, ``2 invalid, 1 flagged``
        (tbflow errors and trials without a record too)."""
        counts = [(self.invalid, "invalid"), (self.errors, "tbflow errors" if self.errors != 1 else "tbflow error"),
                  (self.unrecorded, "unrecorded"), (self.flagged, "flagged")]
        return ", ".join(f"{n} {what}" for n, what in counts if n) or "Completed"

    def attention_tags(self) -> list[str]:
        """Tags for the UI's tag filter: ``tbflow:invalid`` (not all scored), ``tbflow:flagged``."""
        return ([TAG_INVALID] if not self.all_scored else []) + ([TAG_FLAGGED] if self.flagged else [])


class NotAllScored(TbflowError):
    """The job ran and some trials were not scored: the state's data, so the run is ``Failed``."""

    def __init__(self, message: str, result: JobResult) -> None:
        super().__init__(message)
        self.result = result


class InvalidTrialsGate(NotAllScored):
    """``fail_on_invalid`` tripped: the job ran, and too many of its trials were not judged."""


def verdict_of(result: JobResult, threshold: Threshold | None, flag: str = PARAMETER) -> JobVerdict:
    statuses = [r.validity.status for r in result.records]
    planned = len(result.trial_ids)
    verdict = JobVerdict(job_name=result.job_name, job_id=result.job_id, location=result.location or result.job_dir,
                         planned=planned, scored=statuses.count("scored"), invalid=statuses.count("invalid"),
                         errors=statuses.count("error"), unrecorded=max(0, planned - len(statuses)),
                         flagged=sum(1 for r in result.records if r.flags))
    if threshold is not None:
        gate = check(threshold, verdict.invalid, len(statuses), verdict.errors, verdict.unrecorded, flag=flag)
        verdict.gate, verdict.tripped = gate.message, gate.tripped
    return verdict


def final_state(result: JobResult, verdict: JobVerdict, keep_completed: bool | None = None) -> State:
    """The job run's state (its data is the result, or the error holding it). ``keep_completed``
    (default: ``TBFLOW_INVALID_JOB_STATE=completed``) keeps a job with invalid trials green."""
    if keep_completed is None:
        keep_completed = os.environ.get(STATE_VARIABLE, "").strip().lower() == "completed"
    if verdict.tripped:
        message = f"{verdict.summary()}; {verdict.gate}"
        return Failed(name=NOT_ALL_SCORED, message=message, data=InvalidTrialsGate(message, result))
    if verdict.all_scored:
        name = verdict.counts_name() if verdict.flagged else "Completed"
        return Completed(name=name, message=verdict.summary(), data=result)
    if keep_completed or verdict.gate is not None:  # a threshold given and not exceeded: tolerated
        return Completed(name=NOT_ALL_SCORED, message=verdict.summary(), data=result)
    return Failed(name=verdict.counts_name(), message=verdict.summary(),
                  data=NotAllScored(verdict.summary(), result))


def announce(verdict: JobVerdict, logger) -> None:
    """Emit the job's verdict event (best effort: an alert must never fail the job)."""
    try:
        from prefect.events import emit_event

        counts = {k: str(getattr(verdict, k)) for k in ("planned", "scored", "invalid", "errors", "unrecorded")}
        emit_event(
            event=EVENT_ALL_SCORED if verdict.all_scored else EVENT_NOT_ALL_SCORED,
            resource={"prefect.resource.id": f"tbflow.job.{verdict.job_id}",
                      "prefect.resource.name": verdict.job_name, "tbflow.location": verdict.location,
                      **{f"tbflow.{k}": v for k, v in counts.items()}},
            payload={"summary": verdict.summary(), "gate": verdict.gate, "tripped": verdict.tripped},
        )
    except Exception as exc:  # noqa: BLE001 - a view; the verdict is in the state and the records
        logger.warning("could not emit the job's verdict event: %s", exc)
