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
from typing import Mapping

from pydantic import BaseModel, ConfigDict

from flows.job.regrade_plan import regrade_trials
from flows.job.job_config import JobConfig
from flows.job.model_keys import environment_with_keys
from harnesses.registry import get_harness, resolve_harness
from tasks_lib import interrupts
from tasks_lib.gateway.provider_check import provider_mismatch
from tasks_lib.dataset.dataset_models import DatasetSource
from tasks_lib.dataset.names import parse_dataset
from tasks_lib.dataset.resolve import resolve_dataset
from tasks_lib.trial.harness_api import Harness
from tasks_lib.errors import InputError, disk_full
from tasks_lib.gateway.gateway_config import UpstreamConfig
from tasks_lib.store.job_lock import LOCK_NAME, JobLock
from tasks_lib.records.job_identity import (JobIdentity, compute_identity, dataset_identity, identity_changes,
                                           verifier_side_only)
from tasks_lib.store.job_store import JobStore
from tasks_lib.store.remote_lock import JobLocks, RemoteJobLock
from tasks_lib.store.remote_store import attach, check_store, is_url, mirror_for, working_root
from tasks_lib.records.record_models import JobRecord, TrialOrder, TrialRecord, TrialSpec
from tasks_lib.task.task_loader import Dataset, load_dataset
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
    #: the job dir's name was drawn here (default name, or a --force-new dir), not given
    generated_name: bool = False
    #: the trials to run, in the order they start (``--order``)
    order: TrialOrder
    #: each harness's key in the job (trial ids, tags, reports) → how the config names it
    harness_refs: dict[str, str]
    #: a dataset given by name (or an export of one): its pins, recorded in job.json
    dataset_source: DatasetSource | None = None
    #: what resolving the dataset did that the user should hear of (a fetch, a re-fetch)
    notes: list[str] = []

    @property
    def dataset_label(self) -> str:
        """What ``job.json`` records as the dataset: ``name@version`` for a name (so a resume or a
        shard resolves the very same version), else the directory."""
        src = self.dataset_source
        if src is not None and parse_dataset(self.config.dataset).kind != "dir":
            return src.pinned_spec
        return str(self.dataset.root)

    @property
    def job_id(self) -> str:
        return self.specs[0].job_id if self.specs else ""

    def harness(self, key: str) -> Harness:
        return get_harness(self.harness_refs[key])

    def model_wire_apis(self) -> list[str]:
        """The wire APIs the job's model harnesses speak (empty for reference harnesses only)."""
        apis = {h.wire_api for key in self.harness_refs if (h := self.harness(key)).kind == "model"}
        return sorted(a for a in apis if a)

    @property
    def todo(self) -> list[TrialSpec]:
        """The trials still to run, in start order."""
        by_id = {s.trial_id: s for s in self.specs}
        return [by_id[q.trial_id] for q in self.order.trials
                if q.trial_id not in self.recorded or q.trial_id in self.rerun]


def _suffix() -> str:
    """Six random hex digits: runs started in the same second get different job dirs (four made
    two of 50 names alike about one time in 50)."""
    return secrets.token_hex(3)


def default_job_name() -> str:
    """A readable timestamp to the second plus a random suffix, e.g. ``2026-11-30__14-05-09-3fa2c1``."""
    return f"{datetime.now():%Y-%m-%d__%H-%M-%S}-{_suffix()}"


def _fresh_dir(job_dir: Path) -> Path:
    while True:
        candidate = job_dir.with_name(f"{job_dir.name}.{datetime.now():%Y%m%d-%H%M%S}-{_suffix()}")
        if not candidate.exists():
            return candidate


def _check_jobs_dir(jobs_dir: Path) -> None:
    """A ``--jobs-dir`` that is (or lies under) a file is bad input, said in one line."""
    for d in (jobs_dir, *jobs_dir.parents):
        if d.exists():
            if not d.is_dir():
                raise InputError("--jobs-dir", f"{jobs_dir}: {d} is a file, not a directory")
            return


def _is_new_job_dir(job_dir: Path) -> bool:
    """A dir holding nothing but tbflow's lock files is a job being created, not a foreign dir."""
    return all(p.name.startswith(LOCK_NAME) for p in job_dir.iterdir())


def pinned(config: JobConfig, p: JobPlan) -> JobConfig:
    """``config`` naming the planned job dir exactly, so a later plan (the job flow's) lands on it
    too, whether its name was generated or given."""
    jobs_dir = config.jobs_dir if is_url(config.jobs_dir) else str(p.job_dir.parent)  # a store stays its URL
    return config.model_copy(update=dict(jobs_dir=jobs_dir, job_name=p.job_dir.name, force_new=False))


def lock_job(config: JobConfig, p: JobPlan, new_job_id: str) -> tuple[JobPlan, JobLocks]:
    """Take the planned job's lock (``JobLockedError`` when a live run holds it).

    A generated name is claimed by creating its dir exclusively (a new name is drawn if another
    run took it in between). When the lock was not already held by this process, the job is
    planned again under the lock: what an earlier run recorded until it let go counts. A job in a
    store (``jobs_dir`` a URL) is locked in the store too (``tasks_lib/store/remote_lock.py``).
    """
    for _ in range(20):
        try:
            if p.generated_name:
                p.job_dir.parent.mkdir(parents=True, exist_ok=True)
                try:
                    p.job_dir.mkdir()
                except FileExistsError:
                    p = plan(config, new_job_id)
                    continue
            local = JobLock.acquire(p.job_dir, on_lost=interrupts.lock_lost)  # lost: stop as on Ctrl-C
            mirror = mirror_for(p.job_dir)
            try:
                remote = RemoteJobLock.acquire(mirror, on_lost=interrupts.lock_lost) if mirror is not None else None
                lock = JobLocks(local, remote)
            except BaseException:
                local.release()
                raise
        except InputError:
            raise
        except OSError as exc:
            if disk_full(exc):
                raise
            raise InputError("--jobs-dir", f"cannot create the job directory {p.job_dir}: {exc.strerror or exc}") from exc
        if lock.fresh and not p.generated_name:
            try:
                p = plan(pinned(config, p), new_job_id)
            except BaseException:
                lock.release()
                raise
        return p, lock
    raise InputError("--job-name", "could not find a free job name")  # 20 collisions in a row


def upstream_for(wire_apis: list[str], key_secrets: Mapping[str, str] | None = None) -> UpstreamConfig:
    """The gateway's upstream config from the environment, with the keys of the Secret blocks
    ``key_secrets`` names over it (flows/job/model_keys.py), checked to serve every ``wire_apis``."""
    upstream = UpstreamConfig.from_env(environment_with_keys(key_secrets or {}))
    for api in wire_apis:
        upstream.require(api)
    return upstream


def plan(config: JobConfig, new_job_id: str) -> JobPlan:
    resolved, dataset = _tasks(config)
    hres = {ref: resolve_harness(ref) for ref in config.harnesses}
    refs = {r.key: ref for ref, r in hres.items()}
    harnesses = {r.key: get_harness(ref) for ref, r in hres.items()}
    for obj in harnesses.values():  # e.g. a local bundle edited since it was pinned: before any trial
        if (problem := obj.problem_before_job()) is not None:
            raise InputError("--harness", problem)
    identity = compute_identity(config.model_dump(), {t.name: t.path for t in dataset.tasks}, harnesses,
                                {r.key: r.source for r in hres.values()},
                                dataset_identity(resolved.source, [t.name for t in dataset.tasks]))
    model_harnesses = [h for h, obj in harnesses.items() if obj.kind == "model"]
    if model_harnesses:
        if not config.model or "/" not in config.model:
            raise InputError("--model", f"{', '.join(model_harnesses)} need --model PROVIDER/MODEL")
        wires = {h: api for h in model_harnesses if (api := harnesses[h].wire_api)}
        if (mismatch := provider_mismatch(config.model, wires)) is not None:
            raise InputError("--model", mismatch)
        upstream_for(sorted({api for h in model_harnesses if (api := harnesses[h].wire_api)}), config.key_secrets)
    job_dir, previous, generated = _job_dir(config, identity)
    job_id = previous.job_id if previous else new_job_id
    specs, recorded, rerun = _trials(config, dataset, refs, job_id, JobStore(job_dir))
    if config.regrade_from:  # only trials whose whole verifier input was recorded (flows/job/regrade_plan.py)
        specs, not_regraded = regrade_trials(config.regrade_from, specs, {t.name: t for t in dataset.tasks}, identity)
        dataset = dataset.model_copy(update={"problems": [*dataset.problems, *not_regraded]})
    if config.order == "random" and config.order_seed is None:
        config = config.model_copy(update={"order_seed": secrets.randbelow(2**31)})
    to_run = [s for s in specs if s.trial_id not in recorded or s.trial_id in rerun]
    history = expected_from_history({(s.task_name, s.harness) for s in to_run}) if config.order == "expected" else {}
    _, order = order_trials(to_run, {t.name: t for t in dataset.tasks}, config.order, config.order_seed, history)
    return JobPlan(config=config, dataset=dataset, job_dir=job_dir, identity=identity, previous=previous,
                   specs=specs, recorded=recorded, rerun=rerun, generated_name=generated, order=order,
                   dataset_source=resolved.source, notes=resolved.notes, harness_refs=refs)


def _tasks(config: JobConfig):  # noqa: ANN202 - (the resolved dataset, its loaded tasks)
    """The dataset named by the config, loaded and filtered; ``--build`` checked against it."""
    resolved = resolve_dataset(config.dataset, config.registry, config.allow_unpinned)  # a name: fetched, verified
    dataset = load_dataset(resolved.path, config.include, config.exclude, config.n_tasks)
    if not dataset.tasks:
        first = dataset.problems[0]
        raise InputError(first.where, f"no runnable task: {first.message}")
    if config.build:  # the build lane and the trials see the same tasks (TrialSpec.force_build)
        unbuildable = [t.name for t in dataset.tasks if not (t.environment_dir / "Dockerfile").is_file()]
        if unbuildable:
            raise InputError("--build", f"{len(unbuildable)} task(s) have no environment/Dockerfile to build, only "
                                        f"[environment] docker_image: {', '.join(unbuildable[:5])}")
        dataset = dataset.model_copy(update={"tasks": [t.built_from_context() for t in dataset.tasks]})
    return resolved, dataset


def _job_dir(config: JobConfig, identity) -> tuple[Path, JobRecord | None, bool]:  # noqa: ANN001
    """(job dir, its previous record if the job continues, whether its name was generated): an
    existing job of another identity is refused, or with ``--force-new`` left for a fresh dir."""
    store_url = config.jobs_dir if is_url(config.jobs_dir) else None
    if store_url is not None:  # the job lives in a store; it is worked on in a local copy (remote_store.py)
        check_store(store_url)
        jobs_root = working_root(store_url)
    else:
        _check_jobs_dir(Path(config.jobs_dir))
        jobs_root = Path(config.jobs_dir)
    generated = config.job_name is None
    job_dir = jobs_root / (config.job_name or default_job_name())
    if store_url is not None:
        attach(store_url, job_dir.name).pull()
    previous: JobRecord | None = None
    if job_dir.exists() and not (job_dir.is_dir() and _is_new_job_dir(job_dir)):
        store = JobStore(job_dir)
        if not store.job_file.is_file():
            raise InputError("--job-name", f"{job_dir} exists and is not a tbflow job directory")
        previous = store.read_job()
        changes = identity_changes(previous.identity, identity) if previous.identity else ["the job has no identity"]
        if changes:
            if not config.force_new:
                raise InputError("--job-name", f"job {job_dir} was recorded with a different identity, so its "
                                 "trials cannot be mixed with new ones:\n  " + "\n  ".join(changes)
                                 + "\n(use --force-new to start a new job instead"
                                 + _regrade_hint(previous.identity, identity) + ")")
            job_dir, previous, generated = _fresh_dir(job_dir), None, True
            if store_url is not None:
                attach(store_url, job_dir.name).pull()
    return job_dir, previous, generated


def _regrade_hint(old, new) -> str:  # noqa: ANN001 - JobIdentity | None, JobIdentity
    """Only the tests changed: a minor version, which ``tbflow regrade`` judges from the records."""
    if old is None or not verifier_side_only(old, new):
        return ""
    return "; only the tasks' tests changed: `tbflow regrade JOB_DIR DATASET` judges its recorded trials again"


def _trials(config: JobConfig, dataset, refs: dict[str, str], job_id: str, store: JobStore):  # noqa: ANN001, ANN202
    """(every trial's spec, the recorded ones, the recorded ones to run again)."""
    keys = [(t, h, a) for t in dataset.tasks for h in refs for a in range(1, config.attempts + 1)]
    ids = [f"{t.name}.{h}.{a}" for t, h, a in keys]
    recorded = {tid: r for tid in ids if (r := store.read_trial(tid)) is not None}
    # a trial ended by a tbflow bug (status "error") is always run again; its record is kept in history
    rerun = [tid for tid, r in recorded.items() if r.validity.status == "error"
             or (config.rerun_invalid and r.validity.status == "invalid"
                 and config.rerun_invalid in ("all", r.validity.kind))]
    specs = [
        TrialSpec(job_id=job_id, trial_id=tid, task_name=t.name, task_path=str(t.path), harness=h, attempt=a,
                  model=config.model, timeout_multiplier=config.timeout_multiplier,
                  max_log_bytes=config.max_log_mb * 1024 * 1024,
                  harness_ref=refs[h] if refs[h] != h else None, force_build=config.build,
                  verbatim_test_sh=config.verbatim_test_sh)
        for (t, h, a), tid in zip(keys, ids, strict=True)
    ]
    return specs, recorded, rerun
