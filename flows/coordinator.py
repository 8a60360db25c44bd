"""The coordinator side of a job spread over many machines: split the trials to run into shards,
submit each as a flow run of the trial deployment (``flows/shard_flow.py``), and follow them.

The coordinator keeps the job: it wrote ``job.json`` and writes the reports; shards only add
trial records. Progress is read from those records as they appear (shared job storage), so the
job's progress artifact and log move as trials finish on any machine. A shard run that ends
Crashed, Failed or Cancelled (its machine lost, its worker killed) with trials unrecorded is
submitted again for exactly those, up to ``shard_reruns`` times (``flows/job/shard_reruns.py`` says
when not); what is still unrecorded at the end is reported as not recorded, and running the job
again (same ``job_name``) runs exactly that. A recorded trial is never run again.
"""

from __future__ import annotations

import time
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun
from prefect.context import FlowRunContext
from prefect.deployments import run_deployment
from prefect.states import Cancelling

from flows.job.job_plan import JobPlan
from flows.job.run_ui import readable
from flows.job.shard_reruns import ShardRun, after_end
from flows.shard_flow import TRIALS_DEPLOYMENT
from tasks_lib.store.job_store import JobStore
from tasks_lib.store.remote_store import mirror_for
from tasks_lib.records.record_models import TrialSpec

POLL_SEC = 2.0


def split(todo: list[TrialSpec], shards: int) -> list[list[TrialSpec]]:
    """Round-robin, so every shard gets a mix of tasks and harnesses (similar run times)."""
    n = max(1, min(shards, len(todo)))
    return [todo[i::n] for i in range(n)]


def run_shards(todo: list[TrialSpec], p: JobPlan, listener, logger, tags: list[str]) -> list[str]:
    """Run ``todo`` as shards on the trial work pool; return the trial ids left unrecorded."""
    store = JobStore(p.job_dir)
    mirror = mirror_for(p.job_dir)  # a job in a store: shards get its URL (remote_store.py)
    job_dir = mirror.url if mirror is not None else str(p.job_dir.resolve())
    chunks = split(todo, p.config.shards)
    submitted: list[ShardRun] = []

    def submit(shard: ShardRun) -> ShardRun:
        fr: FlowRun = run_deployment(  # type: ignore[assignment]  # called from sync code: a FlowRun
            TRIALS_DEPLOYMENT, timeout=0, as_subflow=True, tags=tags, flow_run_name=shard.name,
            parameters={"job_dir": job_dir, "trial_ids": shard.trial_ids, "concurrency": p.config.concurrency})
        shard.run_id = fr.id
        submitted.append(shard)
        return shard

    active = [submit(ShardRun(p.job_dir.name, i, len(chunks), [s.trial_id for s in chunk]))
              for i, chunk in enumerate(chunks, 1)]
    for shard in active:
        logger.info("shard %d/%d: %d trials, flow run %s", shard.index, shard.count, len(shard.trial_ids), shard.name)
    pending = {s.trial_id for s in todo}
    total = len(p.specs)
    try:
        with get_client(sync_client=True) as client:
            while active:
                states = {s.run_id: client.read_flow_run(s.run_id).state for s in active}  # type: ignore[arg-type]
                _collect(store, pending, p, listener, total)  # after reading states: an ended run's records are in
                still: list[ShardRun] = []
                for shard in active:
                    state = states[shard.run_id]
                    if state is None or not state.is_final():
                        still.append(shard)
                        continue
                    stopping = not state.is_completed() and not _job_running(client)
                    outcome = after_end(shard, state, [t for t in shard.trial_ids if t in pending],
                                        p.config.shard_reruns, stopping)
                    if outcome.log:
                        getattr(logger, outcome.level)("%s", outcome.log)
                    if outcome.next is not None:
                        still.append(submit(outcome.next))
                active = still
                if active:
                    time.sleep(POLL_SEC)
    except BaseException:
        _cancel([s.run_id for s in submitted if s.run_id is not None], logger)
        raise
    return sorted(pending)


def _job_running(client) -> bool:
    """False while the job's own run is being cancelled: Prefect may cancel its shard runs first,
    and a shard cancelled that way is not lost.

    Only a cancellation counts. Any other state of this run that is not Running was set on it from
    outside while it runs (an automation marking it Crashed for want of heartbeats): the job goes
    on, and so does re-submitting a lost shard's trials; read as "stopping", it left 4 of 12
    trials unrecorded under a job that ended Completed."""
    ctx = FlowRunContext.get()
    if ctx is None or ctx.flow_run is None:
        return True
    return not is_stop_request(client.read_flow_run(ctx.flow_run.id).state)


def is_stop_request(state) -> bool:
    """Whether the job run's own ``state`` asks it to stop: only a cancellation does."""
    return state is not None and (state.is_cancelling() or state.is_cancelled())


def _collect(store: JobStore, pending: set[str], p: JobPlan, listener, total: int) -> None:
    if (mirror := mirror_for(store.job_dir)) is not None:
        mirror.refresh()  # a job in a store: the shards' records appear there
    for tid in sorted(pending):
        record = store.read_trial(tid)
        if record is not None:
            pending.discard(tid)
            p.recorded[tid] = record
            listener.trial_finished(record, len(p.recorded), total)


def _cancel(runs: list[UUID], logger) -> None:
    """The coordinator is stopping: cancel its shards (their workers remove their containers)."""
    try:
        with get_client(sync_client=True) as client:
            for r in runs:
                state = client.read_flow_run(r).state
                if state is None or not state.is_final():
                    client.set_flow_run_state(r, Cancelling(), force=True)
    except Exception as exc:  # noqa: BLE001 - best effort while stopping
        logger.warning("could not cancel the shard runs: %s", readable(str(exc)))
