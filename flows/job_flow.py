"""The job flow: tasks × harnesses × attempts → trials, run with bounded concurrency, then the
report flow.

Everything a user can get wrong is checked by ``plan`` before the job directory is written.
Recorded trials are kept and not run again (no container is started for them); with
``rerun_invalid`` the chosen invalid trials are moved into ``attempts/`` history first. On
Ctrl-C, SIGTERM or a Prefect cancellation the flow raises the stop flag and removes the job's
containers by label; interrupted trials end without records, so a resume runs them again.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from pathlib import Path

from prefect import flow, get_run_logger

from flows.job_config import JobConfig
from flows.job_plan import JobPlan, plan, upstream_for
from flows.job_result import JobResult, job_record, result_of
from flows.cli.progress import get_listener
from harnesses.registry import get_harness
from flows.report_flow import report_flow
from flows.trial_queue import run_queue
from tasks_lib.trial import interrupts
from tasks_lib.container.docker_client import LABEL_FLOW_RUN, preflight
from tasks_lib.job.job_store import JobStore
from tasks_lib.gateway.model_link import start_job_gateway, stop_job_gateway
from tasks_lib.job.records import TrialRecord, TrialSpec
from tasks_lib.container.sandbox import remove_job_containers


def _cleanup_hook(flow_, flow_run, state) -> None:
    """On cancellation or crash (run in the runner/worker process): remove this run's containers.

    By the flow-run label every trial container carries, and by the job's label when the job has
    a name (a resumed job's leftovers of earlier runs). A hook must never raise.
    """
    try:
        remove_job_containers(str(flow_run.id), label=LABEL_FLOW_RUN)
    except Exception:  # noqa: BLE001
        pass
    try:
        cfg = JobConfig.model_validate(flow_run.parameters.get("config"))
        if cfg.job_name:
            job = JobStore(Path(cfg.jobs_dir) / cfg.job_name).read_job()
            remove_job_containers(job.job_id)
            stop_job_gateway(job.job_id)
    except Exception:  # noqa: BLE001 - the next run of the job cleans up by label
        pass


@flow(name="tbflow-job", log_prints=False, on_cancellation=[_cleanup_hook], on_crashed=[_cleanup_hook])
def job_flow(config: JobConfig) -> JobResult:
    logger = get_run_logger()
    p = plan(config, uuid.uuid4().hex[:12])
    preflight()
    store = JobStore(p.job_dir)
    record = job_record(p)
    record.order = p.order
    store.write_job(record)
    remove_job_containers(p.job_id)  # leftovers of a crashed earlier run of this job
    for tid in p.rerun:
        store.archive_trial(tid)
        p.recorded.pop(tid, None)
    todo = p.todo
    listener = get_listener(logger)
    listener.job_started(str(p.job_dir), len(p.specs), len(p.specs) - len(todo))
    if todo:
        listener.order_planned(p.order)
    for pr in p.dataset.problems:
        logger.warning("task %s not run: %s: %s", pr.name, pr.where, pr.message)
    unfinished: list[str] = []
    model_apis = p.model_wire_apis()
    try:
        if model_apis and todo:
            start_job_gateway(p.job_id, p.job_dir, upstream_for(model_apis))
            record.harness_provenance = _bundle_provenance(p, logger)
            store.write_job(record)
        unfinished = _run_trials(todo, p, listener)
        record.ended_at = datetime.now(timezone.utc)
        store.write_job(record)
    finally:
        stop_job_gateway(p.job_id)
        listener.job_finished()
        if not interrupts.stopping():
            report_flow(str(p.job_dir))
    return result_of(p, record, unfinished)


def _bundle_provenance(p: JobPlan, logger) -> dict[str, list[dict]]:
    """Prepare each model harness's bundle once up front and record what it was built from.

    A failure here is only logged: every trial of that harness then records it as invalid:
    harness, with the reason, which is where a reader looks for it.
    """
    out: dict[str, list[dict]] = {}
    for name in p.config.harnesses:
        harness = get_harness(name)
        if harness.kind != "model":
            continue
        try:
            prepared = harness.prepare(p.dataset.tasks[0])
            out[name] = [x.model_dump(mode="json") for x in getattr(prepared, "provenance", [])]
        except Exception as exc:  # noqa: BLE001 - recorded per trial as invalid: harness
            logger.warning("harness %s could not be prepared: %s", name, exc)
    return out


def _run_trials(todo: list[TrialSpec], p: JobPlan, listener) -> list[str]:
    interrupts.clear()
    unfinished: list[str] = []
    total = len(p.specs)

    def finished(spec: TrialSpec, record: TrialRecord) -> None:
        p.recorded[spec.trial_id] = record
        listener.trial_finished(record, len(p.recorded), total)

    def interrupted(spec: TrialSpec, outcome) -> None:
        unfinished.append(spec.trial_id)
        listener.trial_interrupted(spec.trial_id, f"{type(outcome).__name__}: {outcome}")

    run_queue(todo, p, finished, interrupted)
    return unfinished
