"""Planning a job: everything decided before anything is written or any container starts.

``plan`` validates the config and the dataset, computes the job's identity, and compares it with
an existing job of the same name. Bad input raises ``InputError`` (the CLI exits 2 and nothing is
written); a changed identity is refused with the list of changes unless ``force_new`` asks for a
fresh job directory. The plan also says which trials are already recorded, so a job whose trials
are all recorded can be finished without starting Prefect or any container.
"""

from __future__ import annotations

import secrets
from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from flows.job_config import JobConfig
from harnesses.registry import get_harness
from tasks_lib.errors import InputError
from tasks_lib.gateway.gateway_config import UpstreamConfig
from tasks_lib.job.job_identity import JobIdentity, compute_identity, identity_changes
from tasks_lib.job.job_store import JobStore
from tasks_lib.job.records import JobRecord, TrialOrder, TrialRecord, TrialSpec
from tasks_lib.job.task_loader import Dataset, load_dataset
from tasks_lib.job.trial_history import expected_from_history
from tasks_lib.job.trial_order import order_trials


class JobPlan(BaseModel):
    model_config = ConfigDict(arbitrary_types_allowed=True)

    config: JobConfig
    dataset: Dataset
    job_dir: Path
    identity: JobIdentity
    previous: JobRecord | None
    specs: list[TrialSpec]
    recorded: dict[str, TrialRecord]
    rerun: list[str]
    #: the trials to run, in the order they start (``--order``)
    order: TrialOrder

    @property
    def job_id(self) -> str:
        return self.specs[0].job_id if self.specs else ""

    def model_wire_apis(self) -> list[str]:
        """The wire APIs the job's model harnesses speak (empty for reference harnesses only)."""
        apis = {get_harness(h).wire_api for h in self.config.harnesses if get_harness(h).kind == "model"}
        return sorted(a for a in apis if a)

    @property
    def todo(self) -> list[TrialSpec]:
        """The trials still to run, in start order."""
        by_id = {s.trial_id: s for s in self.specs}
        return [by_id[q.trial_id] for q in self.order.trials
                if q.trial_id not in self.recorded or q.trial_id in self.rerun]


def default_job_name() -> str:
    return datetime.now().strftime("%Y-%m-%d__%H-%M-%S")


def _fresh_dir(job_dir: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    candidate = job_dir.with_name(f"{job_dir.name}.{stamp}")
    n = 2
    while candidate.exists():
        candidate = job_dir.with_name(f"{job_dir.name}.{stamp}-{n}")
        n += 1
    return candidate


def upstream_for(wire_apis: list[str]) -> UpstreamConfig:
    """The gateway's upstream config from the environment, checked to serve every ``wire_apis``."""
    upstream = UpstreamConfig.from_env()
    for api in wire_apis:
        upstream.require(api)
    return upstream


def plan(config: JobConfig, new_job_id: str) -> JobPlan:
    dataset = load_dataset(Path(config.dataset), config.include, config.exclude, config.n_tasks)
    if not dataset.tasks:
        first = dataset.problems[0]
        raise InputError(first.where, f"no runnable task: {first.message}")
    harnesses = {h: get_harness(h) for h in config.harnesses}
    identity = compute_identity(config.model_dump(), {t.name: t.path for t in dataset.tasks}, harnesses)
    model_harnesses = [h for h, obj in harnesses.items() if obj.kind == "model"]
    if model_harnesses:
        if not config.model or "/" not in config.model:
            raise InputError("--model", f"{', '.join(model_harnesses)} need --model PROVIDER/MODEL")
        upstream_for(sorted({api for h in model_harnesses if (api := harnesses[h].wire_api)}))
    job_dir = Path(config.jobs_dir) / (config.job_name or default_job_name())
    previous: JobRecord | None = None
    if job_dir.exists():
        store = JobStore(job_dir)
        if not store.job_file.is_file():
            raise InputError("--job-name", f"{job_dir} exists and is not a tbflow job directory")
        previous = store.read_job()
        changes = identity_changes(previous.identity, identity) if previous.identity else ["the job has no identity"]
        if changes:
            if not config.force_new:
                raise InputError("--job-name", f"job {job_dir} was recorded with a different identity, so its "
                                 "trials cannot be mixed with new ones:\n  " + "\n  ".join(changes)
                                 + "\n(use --force-new to start a new job instead)")
            job_dir, previous = _fresh_dir(job_dir), None
    job_id = previous.job_id if previous else new_job_id
    store = JobStore(job_dir)
    keys = [(t, h, a) for t in dataset.tasks for h in config.harnesses for a in range(1, config.attempts + 1)]
    ids = [f"{t.name}.{h}.{a}" for t, h, a in keys]
    recorded = {tid: r for tid in ids if (r := store.read_trial(tid)) is not None}
    rerun = []
    if config.rerun_invalid:
        rerun = [tid for tid, r in recorded.items() if r.validity.status == "invalid"
                 and config.rerun_invalid in ("all", r.validity.kind)]
    specs = [
        TrialSpec(job_id=job_id, trial_id=tid, task_name=t.name, task_path=str(t.path), harness=h, attempt=a,
                  model=config.model, timeout_multiplier=config.timeout_multiplier,
                  identity_digest=identity.digest,
                  generation=store.previous_tries(tid) + (1 if tid in rerun else 0))
        for (t, h, a), tid in zip(keys, ids)
    ]
    if config.order == "random" and config.order_seed is None:
        config = config.model_copy(update={"order_seed": secrets.randbelow(2**31)})
    to_run = [s for s in specs if s.trial_id not in recorded or s.trial_id in rerun]
    history = expected_from_history({(s.task_name, s.harness) for s in to_run}) if config.order == "expected" else {}
    _, order = order_trials(to_run, {t.name: t for t in dataset.tasks}, config.order, config.order_seed, history)
    return JobPlan(config=config, dataset=dataset, job_dir=job_dir, identity=identity, previous=previous,
                   specs=specs, recorded=recorded, rerun=rerun, order=order)
