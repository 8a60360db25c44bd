"""The job record of a planned job and what a job returns, built without Prefect (the CLI uses
them to finish an all-recorded job without starting it)."""

from __future__ import annotations

from datetime import datetime, timezone

from tasks_lib import __version__
from flows.job.job_plan import JobPlan
from flows.job.progress import location
from tasks_lib.records.record_models import JobRecord, TaskProblemRecord, TrialRecord


class JobResult(JobRecord):
    """What the job flow returns: the job record plus its trial records."""

    job_dir: str
    records: list[TrialRecord]
    unfinished: list[str]


def job_record(p: JobPlan) -> JobRecord:
    return JobRecord(
        job_id=p.job_id, job_name=p.job_dir.name, dataset=p.dataset_label,
        dataset_source=p.dataset_source, location=location(p.job_dir),
        config=p.config.model_dump(mode="json"), tbflow_version=__version__,
        harness_versions={key: p.harness(key).version for key in p.harness_refs},
        started_at=p.previous.started_at if p.previous else datetime.now(timezone.utc),
        ended_at=p.previous.ended_at if p.previous else None,
        trial_ids=[s.trial_id for s in p.specs], identity=p.identity, identity_digest=p.identity.digest,
        task_problems=[TaskProblemRecord(**pr.model_dump()) for pr in p.dataset.problems],
        task_notes=[TaskProblemRecord(name=t.name, where=str(t.path / "task.toml"), message=note)
                    for t in p.dataset.tasks for note in t.notes],
    )


def result_of(p: JobPlan, record: JobRecord, unfinished: list[str]) -> JobResult:
    records = [p.recorded[s.trial_id] for s in p.specs if s.trial_id in p.recorded]
    return JobResult(**record.model_dump(), job_dir=str(p.job_dir), records=records, unfinished=unfinished)
