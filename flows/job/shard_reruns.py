"""What a job's coordinator does when one of its shard runs ends: nothing, or submit it again for
the trials it left unrecorded (docs/deployments.md, "A lost machine").

A shard run that ends Crashed (Prefect's zombie automation: its machine stopped sending
heartbeats; its worker saw the process die), Failed or Cancelled (by someone else: the coordinator
cancels shards only while it stops itself, and then submits nothing) is submitted again, as
``<job> shard i/N (re-run k)``, for exactly its trials that have no record yet, at most
``shard_reruns`` times. Never again:

- a Completed shard: it ran what it was given (a trial it left unrecorded was interrupted, and
  the job reports it; running the job again runs it);
- a shard refused for bad input (state named ``Refused``: the job's identity differs on that
  machine, the job dir is not there): the same input would be refused again, so its trials are
  reported as not recorded at once, with the refusal;
- a shard whose trials are all recorded (its machine was lost after its last record);
- any shard while the job's own run is being cancelled (Prefect may cancel its shards first).

Kept apart from the Prefect calls (``flows/coordinator.py``) so the rule reads in one place.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from uuid import UUID

from prefect.client.schemas.objects import State

from flows.job.run_ui import REFUSED
from tasks_lib.text_clean import one_line


@dataclass
class ShardRun:
    """One submitted flow run of the trial deployment: shard ``index`` of ``count``, its
    ``rerun``-th re-submission (0: the first run), for ``trial_ids``."""

    job: str
    index: int
    count: int
    trial_ids: list[str]
    rerun: int = 0
    run_id: UUID | None = field(default=None, compare=False)

    @property
    def name(self) -> str:
        base = f"{self.job} shard {self.index}/{self.count}"
        return f"{base} (re-run {self.rerun})" if self.rerun else base


@dataclass
class Outcome:
    """The coordinator's decision on an ended shard run: the run to submit next (or None) and
    the line it logs on the job's flow run (None: nothing worth saying)."""

    next: ShardRun | None
    log: str | None
    level: str = "warning"


def after_end(shard: ShardRun, state: State, unrecorded: list[str], max_reruns: int,
              job_stopping: bool = False) -> Outcome:
    """Decide on ``shard``, whose run ended in ``state`` with ``unrecorded`` of its trials left
    (``job_stopping``: the job's own run is being cancelled)."""
    what = f"shard {shard.index}/{shard.count} (flow run '{shard.name}') ended {state.name}"
    if state.message:
        what += f": {one_line(state.message, 300).rstrip('.')}"
    if not unrecorded:
        return Outcome(None, None if state.is_completed() else f"{what}; all its trials are recorded", "info")
    n = len(unrecorded)
    if state.is_completed():
        return Outcome(None, f"{what}; {n} of its trials are not recorded (interrupted): run the job again")
    if state.name == REFUSED:
        return Outcome(None, f"{what}; its {n} unrecorded trials are not re-run (the same input would be "
                             f"refused again) and are reported as not recorded")
    if job_stopping:
        return Outcome(None, f"{what}; the job is stopping: its {n} unrecorded trials are not re-run")
    if shard.rerun >= max_reruns:
        return Outcome(None, f"{what}; {n} trials not recorded and no re-run left (shard_reruns={max_reruns}): "
                             f"they are reported as not recorded")
    nxt = ShardRun(shard.job, shard.index, shard.count, list(unrecorded), shard.rerun + 1)
    return Outcome(nxt, f"{what}; lost with {n} of its {len(shard.trial_ids)} trials not recorded: "
                        f"re-submitted them as '{nxt.name}' (re-run {nxt.rerun} of at most {max_reruns})")
