"""Which trials of a regrade job run, and from which source trial (``JobConfig.regrade_from``).

A regrade job has the source job's trial ids (task × harness × attempt); each runs only when
``regrade_check`` finds its whole verifier input recorded, else it is listed as a problem with the
reason and never run (running the agent instead would be a rerun, not a regrade).
"""

from __future__ import annotations

from pathlib import Path

from tasks_lib.errors import InputError
from tasks_lib.records.job_identity import JobIdentity
from tasks_lib.records.record_models import TrialSpec
from tasks_lib.store.job_store import JobStore
from tasks_lib.task.task_loader import TaskProblem
from tasks_lib.task.task_model import Task
from tasks_lib.trial.regrade_check import why_not_regradable
from tasks_lib.trial.regrade_replay import source_manifest, source_record


def regrade_trials(source: str, specs: list[TrialSpec], tasks: dict[str, Task],
                   identity: JobIdentity) -> tuple[list[TrialSpec], list[TaskProblem]]:
    """(the specs that regrade, each pointing at its source trial; the rest as problems)."""
    source_dir = Path(source).resolve()
    try:
        record = JobStore(source_dir).read_job()
    except InputError as exc:
        raise InputError("regrade_from", f"{source_dir}: not a job directory tbflow can read: {exc.message}") from exc
    source_tasks = record.identity.tasks if record.identity is not None else {}
    kept: list[TrialSpec] = []
    problems: list[TaskProblem] = []
    for spec in specs:
        trial_dir = source_dir / "trials" / spec.trial_id
        why = why_not_regradable(tasks[spec.task_name], source_record(trial_dir), source_manifest(trial_dir),
                                 source_tasks.get(spec.task_name), identity.tasks.get(spec.task_name, {}))
        if why is None:
            kept.append(spec.model_copy(update={"regrade_source": str(trial_dir)}))
        else:
            problems.append(TaskProblem(name=spec.trial_id, where=str(trial_dir), message=f"not regraded: {why}"))
    if not kept:
        first = problems[0] if problems else None
        raise InputError("regrade_from", f"no trial of {source_dir} can be regraded"
                                         + (f": {first.name}: {first.message}" if first else ""))
    return kept, problems
