"""The job run's verdict where Prefect can see it, filter on it and alert on it (docs/deployments.md,
"Alerts on invalid trials").

A trial's verdict is already its task run's state (``flows/trial_flow.verdict_state``: an invalid
trial is a red ``Failed`` named ``Invalid``). The job run's own state says the same for the whole
job:

- every planned trial scored: ``Completed``, message ``12 of 12 trials scored``;
- some invalid, ended by a tbflow error, or without a record (a lost shard past its re-runs):
  ``Completed`` named ``Not all scored``, the counts as its message; or, when the
  ``fail_on_invalid`` gate trips (the CLI's ``--fail-on-invalid`` semantics,
  ``tasks_lib/report/invalid_gate.py``), ``Failed`` named ``Not all scored``.

And one event per finished job run, ``tbflow.job.all-scored`` or ``tbflow.job.not-all-scored``,
whose resource is the job (its counts as labels) and whose related resources (added by Prefect)
are the flow run, its flow, deployment and tags: what an automation triggers on
(``deployments/alert-not-all-scored.yaml``). A state name alone cannot carry the counts, and a
Completed-type state would not be told apart by a "notify on Failed" rule.

Python callers of the flow get the ``JobResult`` back, or ``InvalidTrialsGate`` raised (it holds
the result) when the gate tripped.
"""

from __future__ import annotations

from pydantic import BaseModel
from prefect.states import Completed, Failed, State

from flows.job.job_result import JobResult
from tasks_lib.errors import TbflowError
from tasks_lib.report.invalid_gate import Threshold, check

NOT_ALL_SCORED = "Not all scored"
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
    gate: str | None = None  # the gate's message, when a threshold was given
    tripped: bool = False

    @property
    def all_scored(self) -> bool:
        return self.scored == self.planned

    def summary(self) -> str:
        if self.all_scored:
            return f"{self.scored} of {self.planned} trials scored"
        parts = [f"{self.scored} scored", f"{self.invalid} invalid"]
        if self.errors:
            parts.append(f"{self.errors} tbflow error{'s' if self.errors != 1 else ''}")
        if self.unrecorded:
            parts.append(f"{self.unrecorded} without a record")
        return f"{self.planned} trials: " + ", ".join(parts)


class InvalidTrialsGate(TbflowError):
    """``fail_on_invalid`` tripped: the job ran, and too many of its trials were not judged."""

    def __init__(self, message: str, result: JobResult) -> None:
        super().__init__(message)
        self.result = result


def verdict_of(result: JobResult, threshold: Threshold | None, flag: str = PARAMETER) -> JobVerdict:
    statuses = [r.validity.status for r in result.records]
    planned = len(result.trial_ids)
    verdict = JobVerdict(job_name=result.job_name, job_id=result.job_id, location=result.location or result.job_dir,
                         planned=planned, scored=statuses.count("scored"), invalid=statuses.count("invalid"),
                         errors=statuses.count("error"), unrecorded=max(0, planned - len(statuses)))
    if threshold is not None:
        gate = check(threshold, verdict.invalid, len(statuses), verdict.errors, verdict.unrecorded, flag=flag)
        verdict.gate, verdict.tripped = gate.message, gate.tripped
    return verdict


def final_state(result: JobResult, verdict: JobVerdict) -> State:
    """The job run's state (its data is the result, or the gate's error holding it)."""
    if verdict.tripped:
        message = f"{verdict.summary()}; {verdict.gate}"
        return Failed(name=NOT_ALL_SCORED, message=message, data=InvalidTrialsGate(message, result))
    if verdict.all_scored:
        return Completed(message=verdict.summary(), data=result)
    return Completed(name=NOT_ALL_SCORED, message=verdict.summary(), data=result)


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
