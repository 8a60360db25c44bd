"""The coordinator side of a job spread over many machines: split the trials to run into shards,
submit each as a flow run of the trial deployment (``flows/trials_flow.py``), and follow them.

The coordinator keeps the job: it wrote ``job.json`` and writes the reports; shards only add
trial records. Progress is read from those records as they appear (shared job storage), so the
job's progress artifact and log move as trials finish on any machine. A shard that ends without
recording all its trials (its machine lost, its worker killed, its run cancelled) leaves those
trials unrecorded: the job reports them as not recorded, and running the job again (same
``job_name``) runs exactly them; a recorded trial is never run again.
"""

from __future__ import annotations

import time
from uuid import UUID

from prefect.client.orchestration import get_client
from prefect.client.schemas.objects import FlowRun
from prefect.deployments import run_deployment
from prefect.states import Cancelling

from flows.job_plan import JobPlan
from flows.run_ui import readable
from flows.trials_flow import TRIALS_DEPLOYMENT
from tasks_lib.job.job_store import JobStore
from tasks_lib.job.records import TrialSpec

POLL_SEC = 2.0


def split(todo: list[TrialSpec], shards: int) -> list[list[TrialSpec]]:
    """Round-robin, so every shard gets a mix of tasks and harnesses (similar run times)."""
    n = max(1, min(shards, len(todo)))
    return [todo[i::n] for i in range(n)]


def run_shards(todo: list[TrialSpec], p: JobPlan, listener, logger, tags: list[str]) -> list[str]:
    """Run ``todo`` as shards on the trial work pool; return the trial ids left unrecorded."""
    store = JobStore(p.job_dir)
    job_dir = str(p.job_dir.resolve())
    chunks = split(todo, p.config.shards)
    runs: list[UUID] = []
    for i, chunk in enumerate(chunks, 1):
        fr: FlowRun = run_deployment(  # type: ignore[assignment]  # called from sync code: a FlowRun
            TRIALS_DEPLOYMENT, timeout=0, as_subflow=True, tags=tags,
            flow_run_name=f"{p.job_dir.name} shard {i}/{len(chunks)}",
            parameters={"job_dir": job_dir, "trial_ids": [s.trial_id for s in chunk],
                        "concurrency": p.config.concurrency})
        runs.append(fr.id)
        logger.info("shard %d/%d: %d trials, flow run %s", i, len(chunks), len(chunk), fr.name)
    pending = {s.trial_id for s in todo}
    total = len(p.specs)
    try:
        with get_client(sync_client=True) as client:
            while True:
                states = [client.read_flow_run(r).state for r in runs]
                final = all(s is not None and s.is_final() for s in states)
                _collect(store, pending, p, listener, total)
                if final:
                    break
                time.sleep(POLL_SEC)
    except BaseException:
        _cancel(runs, logger)
        raise
    for r, s in zip(runs, states, strict=True):
        if s is not None and not s.is_completed():
            logger.warning("shard run %s ended %s: %s", r, s.name, readable(s.message or ""))
    return sorted(pending)


def _collect(store: JobStore, pending: set[str], p: JobPlan, listener, total: int) -> None:
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
