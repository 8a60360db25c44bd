"""The job flow: tasks × harnesses × attempts → trials, run with bounded concurrency.

Everything a user can get wrong is checked before the job directory is created (config, dataset,
Docker), so bad input writes nothing. Trials that already have a record in the job directory are
kept and not run again. On Ctrl-C or a Prefect cancellation the flow raises the stop flag, removes
the job's containers by label, and lets the interrupted trials end without records.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timezone
from pathlib import Path

from prefect import flow, get_run_logger
from prefect.futures import as_completed
from prefect.task_runners import ThreadPoolTaskRunner

from flows import __version__
from flows.job_config import JobConfig
from flows.progress import get_listener
from flows.trial_flow import run_trial
from harnesses.registry import get_harness
from tasks_lib import interrupts
from tasks_lib.docker_client import preflight
from tasks_lib.errors import InputError
from tasks_lib.job_store import JobStore
from tasks_lib.records import JobRecord, TaskProblemRecord, TrialRecord, TrialSpec
from tasks_lib.sandbox import remove_job_containers
from tasks_lib.task_loader import Dataset, load_dataset


class JobResult(JobRecord):
    """What the job flow returns: the job record plus its trial records."""

    job_dir: str
    records: list[TrialRecord]
    unfinished: list[str]


def default_job_name() -> str:
    return datetime.now().strftime("%Y-%m-%d__%H-%M-%S")


def plan(config: JobConfig) -> tuple[Dataset, Path]:
    """Validate everything that can be wrong before anything is written."""
    dataset = load_dataset(Path(config.dataset), config.include, config.exclude, config.n_tasks)
    if not dataset.tasks:
        first = dataset.problems[0]
        raise InputError(first.where, f"no runnable task: {first.message}")
    job_dir = Path(config.jobs_dir) / (config.job_name or default_job_name())
    if job_dir.exists() and not (job_dir / "job.json").is_file():
        raise InputError("--job-name", f"{job_dir} exists and is not a tbflow job directory")
    return dataset, job_dir


def trial_specs(job_id: str, dataset: Dataset, config: JobConfig) -> list[TrialSpec]:
    return [
        TrialSpec(job_id=job_id, trial_id=f"{t.name}.{h}.{a}", task_name=t.name, task_path=str(t.path),
                  harness=h, attempt=a, model=config.model)
        for t in dataset.tasks for h in config.harnesses for a in range(1, config.attempts + 1)
    ]


@flow(name="tbflow-job", log_prints=False)
def job_flow(config: JobConfig) -> JobResult:
    logger = get_run_logger()
    dataset, job_dir = plan(config)
    preflight()
    store = JobStore(job_dir)
    previous = store.read_job() if store.job_file.exists() else None
    job_id = previous.job_id if previous else uuid.uuid4().hex[:12]
    specs = trial_specs(job_id, dataset, config)
    record = JobRecord(
        job_id=job_id, job_name=job_dir.name, dataset=str(dataset.root), config=config.model_dump(mode="json"),
        tbflow_version=__version__, harness_versions={h: get_harness(h).version for h in config.harnesses},
        started_at=previous.started_at if previous else datetime.now(timezone.utc),
        trial_ids=[s.trial_id for s in specs],
        task_problems=[TaskProblemRecord(**p.model_dump()) for p in dataset.problems],
    )
    store.write_job(record)
    remove_job_containers(job_id)
    done = {s.trial_id: r for s in specs if (r := store.read_trial(s.trial_id)) is not None}
    todo = [s for s in specs if s.trial_id not in done]
    listener = get_listener(logger)
    listener.job_started(str(job_dir), len(specs), len(done))
    for p in dataset.problems:
        logger.warning("task %s not run: %s: %s", p.name, p.where, p.message)
    unfinished = _run_trials(todo, str(job_dir), config.concurrency, done, len(specs), listener, job_id)
    record.ended_at = datetime.now(timezone.utc)
    store.write_job(record)
    listener.job_finished()
    records = [done[s.trial_id] for s in specs if s.trial_id in done]
    return JobResult(**record.model_dump(), job_dir=str(job_dir), records=records, unfinished=unfinished)


def _run_trials(todo: list[TrialSpec], job_dir: str, concurrency: int, done: dict[str, TrialRecord],
                total: int, listener, job_id: str) -> list[str]:
    interrupts.clear()
    unfinished: list[str] = []
    try:
        with ThreadPoolTaskRunner(max_workers=concurrency) as runner:
            futures = {runner.submit(run_trial, {"spec": s, "job_dir": job_dir}): s for s in todo}
            for fut in as_completed(list(futures)):
                spec = futures[fut]
                outcome = fut.result(raise_on_failure=False)
                if isinstance(outcome, TrialRecord):
                    done[spec.trial_id] = outcome
                    listener.trial_finished(outcome, len(done), total)
                else:
                    unfinished.append(spec.trial_id)
                    listener.trial_interrupted(spec.trial_id, f"{type(outcome).__name__}: {outcome}")
    except BaseException:
        # Ctrl-C / TerminationSignal reach only this thread: stop the trial threads and remove
        # their containers, so nothing of this job keeps running after we are gone.
        interrupts.request_stop()
        remove_job_containers(job_id)
        raise
    return unfinished
