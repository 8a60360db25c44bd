"""One shard of a job: some of its trials, run by whichever worker of the trial work pool picks
the flow run up, on that machine's Docker engine and with that machine's model gateway.

Why shards are flow runs of a deployment (docs/deployments.md, "One job on many machines"): each
shard is an ordinary job run in miniature (the same trial task, stage DAG, cache keys, retries
and gateway as a local run), so nothing about a trial changes with where it runs, and Prefect's
work pools decide where (a worker's ``--limit`` caps the shards one machine runs at once). The
job's coordinator (``job_flow`` with ``shards``) owns the job directory: it writes ``job.json``
and the reports; a shard writes only the records of its own trials, each atomically into its
own ``trials/<trial id>/`` (tasks_lib/store/job_store.py), so shards never write the same file.

A shard re-plans the job from ``job.json`` and refuses (one line, nothing run) when the job's
identity differs on this machine: other task files or adapter code would make its records
incomparable. Trials already recorded are skipped, when the shard is planned and again just
before each trial starts, so a shard submitted again (a re-run of a lost shard, a job run again)
never starts a recorded trial.
"""

from __future__ import annotations

import socket
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.runtime import flow_run

from flows.job.job_config import Concurrency, JobConfig, in_parameter_terms
from flows.job.job_plan import plan, upstream_for
from flows.job.progress import LogListener, location
from flows.job.run_ui import readable_task_run_logs, refused
from flows.job.trial_runner import run_trials
from tasks_lib.container.docker_client import LABEL_FLOW_RUN, preflight
from tasks_lib.errors import DockerUnavailableError, InputError
from tasks_lib.store.job_store import JobStore
from tasks_lib.store.remote_store import attach, check_store, is_url, mirror_for, split_job_url
from tasks_lib.trial.model_link import start_job_gateway, stop_job_gateway
from tasks_lib.container.container_removal import remove_job_containers

#: the deployment a coordinator submits shards to (deployments/prefect.yaml)
TRIALS_DEPLOYMENT = "tbflow-trials/trials"


def _cleanup_hook(flow: Any, flow_run: Any, state: Any) -> None:  # noqa: ARG001 (Prefect's hook signature)
    """On cancellation or crash: remove the containers this shard started (its flow-run label),
    never the job's others, which a sibling shard may be running on the same engine."""
    try:
        remove_job_containers(str(flow_run.id), label=LABEL_FLOW_RUN)
    except Exception:  # noqa: BLE001 - a hook must never raise
        pass


@flow(name="tbflow-trials", log_prints=False, on_cancellation=[_cleanup_hook], on_crashed=[_cleanup_hook])
def shard_flow(job_dir: str, trial_ids: list[str], concurrency: Concurrency = 1) -> dict:
    """Run these trials of the job in ``job_dir`` (an absolute path every worker reaches, or the
    job's URL in a store: then this machine works in its own copy and uploads its trials).

    Args:
        job_dir: The job directory, on a filesystem shared by every worker of the pool, or its URL.
        trial_ids: The trials of this shard (``<task>.<harness>.<attempt>``).
        concurrency: Trials of this shard running at once on this machine.
    """
    logger = get_run_logger()
    readable_task_run_logs()
    try:
        if is_url(job_dir):  # a job in a store: pull its record into this machine's working copy
            jobs_dir, name = split_job_url(job_dir)
            check_store(jobs_dir)
            (mirror := attach(jobs_dir, name)).pull()
            store = JobStore(mirror.local)
        else:
            jobs_dir, name = str(Path(job_dir).parent), Path(job_dir).name
            store = JobStore(Path(job_dir))
        job = store.read_job()
        config = JobConfig.model_validate({
            **job.config, "dataset": job.dataset, "jobs_dir": jobs_dir,
            "job_name": name, "concurrency": concurrency, "force_new": False, "rerun_invalid": None,
            "shards": 0})
        p = plan(config, job.job_id)
        preflight()
    except (InputError, DockerUnavailableError) as exc:
        return refused(logger, exc, in_parameter_terms(f"{getattr(exc, 'where', 'docker')}: "
                                                       f"{getattr(exc, 'message', exc)}"))
    wanted = set(trial_ids)
    unknown = sorted(wanted - {s.trial_id for s in p.specs})
    if unknown:
        return refused(logger, InputError("trial_ids", "unknown"), f"trial_ids: not trials of this job: {unknown}")
    todo = [s for s in p.specs if s.trial_id in wanted and s.trial_id not in p.recorded]
    listener = LogListener(logger)
    listener.job_started(str(p.job_dir.resolve()), len(wanted), len(wanted) - len(todo))
    logger.info("shard on %s: %d of its %d trials to run", location(p.job_dir), len(todo), len(wanted))
    model_apis = p.model_wire_apis()
    run_id = str(flow_run.get_id() or "")
    skipped: set[str] = set()
    try:
        if model_apis and todo:
            start_job_gateway(p.job_id, p.job_dir, upstream_for(model_apis, p.config.key_secrets))
        unfinished = run_trials(todo, p, listener,
                                cleanup=lambda: remove_job_containers(run_id, label=LABEL_FLOW_RUN),
                                recorded_elsewhere=lambda tid: _recorded_meanwhile(store, tid, skipped, logger))
    finally:
        stop_job_gateway(p.job_id)
    if (m := mirror_for(p.job_dir)) is not None:
        m.finish()  # failed uploads retried; still failing: the shard fails naming the store
    ran = [s.trial_id for s in todo if s.trial_id not in unfinished and s.trial_id not in skipped]
    return {"host": socket.gethostname(), "ran": ran, "unfinished": unfinished}


def _recorded_meanwhile(store: JobStore, trial_id: str, skipped: set[str], logger) -> bool:
    """A trial recorded since this shard was planned (by a shard run taken for lost whose machine
    was still running it) is not started again."""
    if (mirror := mirror_for(store.job_dir)) is not None:
        mirror.fetch_record(trial_id)  # a job in a store: recorded there, by a shard on another machine
    if store.read_trial(trial_id) is None:
        return False
    logger.warning("%s: recorded meanwhile by another shard run: not run again", trial_id)
    skipped.add(trial_id)
    return True
