"""The job flow: tasks × harnesses × attempts → trials, run with bounded concurrency, then the
reports (the report flow's body, run inside this flow run so its artifacts are on the job's run).

Everything a user can get wrong is checked by ``plan`` before the job directory is written.
Recorded trials are kept and not run again (no container is started for them); with
``rerun_invalid`` the chosen invalid trials are moved into ``attempts/`` history first. On
Ctrl-C, SIGTERM or a Prefect cancellation the flow raises the stop flag and removes the job's
containers by label; interrupted trials end without records, so a resume runs them again.

What the Prefect UI shows (tags, progress artifact, one-line refusals) is in ``flows/job/run_ui.py``.

One owner per job: the flow holds the job dir's lock (``tasks_lib/store/job_lock.py``) for the
whole run, so a second run of the same job is refused (one line, like bad input) instead of
sharing containers, cached stages and records; with the lock held it removes what crashed earlier
runs left (``job_orphans``), and at the end anything of the job still there.

No ``from __future__ import annotations`` here: a runner or worker validates a deployment run's
parameters with a model Prefect builds from the annotations, and a postponed ``JobConfig`` left
it "not fully defined", so every deployment run failed.
"""

import uuid
from datetime import datetime, timezone
from pathlib import Path

from prefect import flow, get_run_logger
from pydantic import ValidationError

from flows.job.job_config import (AllowUnpinned, Attempts, Build, Concurrency, Dataset, EnvRetries, Exclude,
                                  FailOnInvalid, ForceNew, Harnesses, Include, JobConfig, JobName, JobsDir, MaxLogMb,
                                  Model, NTasks, Order, OrderSeed, Prices, Registry, RerunInvalid, ShardReruns, Shards,
                                  TimeoutMultiplier, VerbatimTestSh, RegradeFrom,
                                  in_parameter_terms)
from flows.job.model_keys import KeySecrets
from tasks_lib.records.record_models import DEFAULT_MAX_LOG_MB
from tasks_lib.report.invalid_gate import parse_threshold
from flows.job.job_plan import JobPlan, lock_job, plan, upstream_for
from flows.job.job_result import JobResult, job_record, result_of
from flows.job.job_verdict import announce, final_state, verdict_of
from flows.job.progress import LogListener, installed_listener, location
from flows.report_flow import artifact_key, report_flow
from flows.process_heap import freeze_imported
from flows.job.run_ui import (Fanout, ProgressArtifact, job_tags, readable, readable_task_run_logs, refused,
                             tag_flow_run)
from flows.coordinator import run_shards
from flows.job.nightly import hook_job_name, publish_nightly_views, scheduled_job_name
from flows.job.trial_runner import run_trials
from tasks_lib import interrupts
from tasks_lib.container.docker_client import LABEL_FLOW_RUN, preflight
from tasks_lib.errors import DockerUnavailableError, InputError
from tasks_lib.job.job_orphans import remove_orphans
from tasks_lib.store.job_store import JobStore
from tasks_lib.store.remote_store import is_url, mirror_for, working_root
from tasks_lib.trial.model_link import start_job_gateway, stop_job_gateway
from tasks_lib.trial.trajectory_stage import keep_job_prices
from tasks_lib.container.container_removal import remove_job_containers


def _cleanup_hook(flow, flow_run, state) -> None:
    """On cancellation or crash: remove this run's containers.

    Prefect calls it in the flow's own process (positional arguments) after a crash there, and in
    the runner or worker process (keyword arguments ``flow=``, ``flow_run=``, ``state=``) after it
    cancelled the run or saw its process die, e.g. of ``kill -9``: the parameter names must be
    Prefect's. By the flow-run label every trial container carries, and by the job's label when
    the job has a name (a resumed job's leftovers of earlier runs). A hook must never raise.
    """
    try:
        remove_job_containers(str(flow_run.id), label=LABEL_FLOW_RUN)
    except Exception:  # noqa: BLE001
        pass
    try:
        params = flow_run.parameters
        if name := hook_job_name(flow_run):
            jobs_dir = params.get("jobs_dir") or "jobs"
            root = working_root(jobs_dir) if is_url(jobs_dir) else Path(jobs_dir)  # no store access here
            job = JobStore(root / name).read_job()
            remove_job_containers(job.job_id)
            stop_job_gateway(job.job_id)
    except Exception:  # noqa: BLE001 - the next run of the job cleans up by label
        pass


def _job_flow(
    dataset: Dataset,
    registry: Registry = None,
    allow_unpinned: AllowUnpinned = False,
    build: Build = False,
    verbatim_test_sh: VerbatimTestSh = False,
    regrade_from: RegradeFrom = None,
    harnesses: Harnesses = ["oracle"],  # noqa: B006 - never mutated; Prefect shows it as the form's default
    model: Model = None,
    concurrency: Concurrency = 1,
    attempts: Attempts = 1,
    include: Include = [],  # noqa: B006
    exclude: Exclude = [],  # noqa: B006
    n_tasks: NTasks = None,
    jobs_dir: JobsDir = "jobs",
    job_name: JobName = None,
    timeout_multiplier: TimeoutMultiplier = 1.0,
    env_retries: EnvRetries = 2,
    max_log_mb: MaxLogMb = DEFAULT_MAX_LOG_MB,
    rerun_invalid: RerunInvalid = None,
    force_new: ForceNew = False,
    shards: Shards = 0,
    shard_reruns: ShardReruns = 2,
    order: Order = "expected",
    order_seed: OrderSeed = None,
    fail_on_invalid: FailOnInvalid = None,
    key_secrets: KeySecrets = {},  # noqa: B006 - never mutated
    prices: Prices = None,
) -> JobResult:
    """Run a job. Flat parameters (the fields of ``JobConfig``), so one of them can be changed with
    ``prefect deployment run --param NAME=VALUE``; Python callers pass ``**config.flow_parameters()``.

    Bad input (a missing dataset, another job's name, no Docker engine) ends the run Failed with one
    line before anything is written; a finished run says if every trial scored (flows/job/job_verdict.py).
    """
    params = dict(locals())
    freeze_imported()  # a deployment's flow-run process: its imports are done (flows/process_heap.py)
    logger = get_run_logger()
    try:
        params["job_name"] = scheduled_job_name(job_name)  # a template: from this run's scheduled start
        config = JobConfig.model_validate(params)
    except InputError as exc:  # a job_name template that does not render
        return refused(logger, exc, f"parameter {exc.where}: {exc.message}")
    except ValidationError as exc:  # e.g. a plug-in this worker cannot import: refused like any bad input
        return _refused_parameters(logger, exc)
    planned, ended = _plan_and_lock(config, logger)
    if planned is None:
        return ended
    p, lock = planned
    try:
        result = _run_job(p, logger)
        publish_nightly_views(job_name, p.job_dir, logger)  # a templated job: its trend and last-night diff
    finally:
        lock.release()
    return _ended(result, config, logger)


def _plan_and_lock(config: JobConfig, logger):  # noqa: ANN001, ANN202 - Prefect's logger; (plan and lock, or the end)
    """Plan the job, check the engine and take the job's lock: one owner per job, for the whole run.
    Bad input ends the run before anything is written: the refusal comes back as its end state."""
    new_job_id = uuid.uuid4().hex[:12]
    try:
        p = plan(config, new_job_id)
        for note in p.notes:  # a dataset fetched, or a changed cached copy fetched again
            logger.warning("%s", note)
        preflight()
        return lock_job(config, p, new_job_id), None
    except InputError as exc:  # also JobLockedError: another live run holds the job
        return None, refused(logger, exc, in_parameter_terms(f"{exc.where}: {exc.message}"))
    except DockerUnavailableError as exc:
        return None, refused(logger, exc, f"docker: {exc}")


def _refused_parameters(logger, exc: ValidationError):  # noqa: ANN001, ANN202 - Prefect's logger; a state
    err = exc.errors()[0]
    bad = InputError(".".join(map(str, err["loc"])), err["msg"].removeprefix("Value error, "))
    return refused(logger, bad, in_parameter_terms(f"parameter {bad.where}: {bad.message}"))


def _ended(result: JobResult, config: JobConfig, logger) -> JobResult:  # noqa: ANN001 - Prefect's logger
    """The job's verdict, said in the log and as the run's final state."""
    verdict = verdict_of(result, parse_threshold(config.fail_on_invalid) if config.fail_on_invalid else None)
    announce(verdict, logger)
    if tags_ := verdict.attention_tags():  # the UI's tag filter finds the runs that need a look
        tag_flow_run(tags_, logger, name=Path(result.job_dir).name)
    logger.info("job %s: %s", result.job_name, verdict.summary())  # the run's state says it too
    return final_state(result, verdict)  # type: ignore[return-value]  # Prefect hands callers its data


def _run_name() -> str:
    """The flow run's name: the job's (issue 31: random word pairs said nothing in the run list).
    An unnamed job is renamed once its directory name is chosen (``run_ui.tag_flow_run``)."""
    try:
        from prefect.runtime import flow_run

        return str(scheduled_job_name(flow_run.parameters.get("job_name")) or "tbflow-job")
    except Exception:  # noqa: BLE001 - a name must never fail the run
        return "tbflow-job"


_job_flow.__doc__ = (_job_flow.__doc__ or "") + JobConfig.args_docstring()
#: ``validate_parameters=False``: the flow validates its parameters itself (``JobConfig`` above, the
#: same annotated types), so a value the server did not check (the UI form with "Validate
#: parameters" off, concurrency 0) ends ``Refused`` with one line naming the parameter, not a
#: multi-line ``Failed`` from Prefect's own check before the flow starts (issue 19).
job_flow = flow(name="tbflow-job", log_prints=False, validate_parameters=False, on_cancellation=[_cleanup_hook],
                on_crashed=[_cleanup_hook], flow_run_name=_run_name)(_job_flow)


def _run_job(p: JobPlan, logger) -> JobResult:
    store = JobStore(p.job_dir)
    record = job_record(p)
    record.order = p.order
    if p.config.prices:  # before job.json: a store mirror uploads it with the job's first write
        keep_job_prices(p.job_dir, Path(p.config.prices))
    store.write_job(record)
    remove_orphans(p.job_dir, p.job_id)  # leftovers of a crashed earlier run of this job
    for tid in p.rerun:
        store.archive_trial(tid)
        p.recorded.pop(tid, None)
    todo = p.todo
    readable_task_run_logs()
    tags_ = job_tags(p)
    tag_flow_run(tags_, logger, name=p.job_dir.name)
    progress_artifact = ProgressArtifact(artifact_key(p.job_dir.name, "progress"), logger)
    progress_artifact.count(list(p.recorded.values()))
    listener = Fanout(LogListener(logger), progress_artifact, installed_listener())
    listener.job_started(str(p.job_dir.resolve()), len(p.specs), len(p.specs) - len(todo))
    if todo:
        listener.order_planned(p.order)
    for pr in p.dataset.problems:
        logger.warning("task %s not run: %s: %s", pr.name, pr.where, readable(pr.message))
    for t in p.dataset.tasks:
        for note in t.notes:
            logger.warning("task %s: %s", t.name, readable(note))
    unfinished: list[str] = []
    model_apis = p.model_wire_apis()
    try:
        if model_apis and todo and not p.config.shards:
            start_job_gateway(p.job_id, p.job_dir, upstream_for(model_apis, p.config.key_secrets))
            record.harness_provenance = _bundle_provenance(p, logger)
            store.write_job(record)
        if p.config.shards and todo:  # each trial's task run is tagged as the job (flows/trial_flow.py)
            unfinished = run_shards(todo, p, listener, logger, tags_)
        else:
            unfinished = run_trials(todo, p, listener)
        record.ended_at = datetime.now(timezone.utc)
        store.write_job(record)
    finally:
        stop_job_gateway(p.job_id)
        listener.job_finished()
        _sweep(p, logger)
        if not interrupts.stopping():
            # in this flow run's own context, so the report artifacts are on the job's run
            report_flow.fn(str(p.job_dir))
            logger.info("job %s: report in %s", p.job_dir.name, location(p.job_dir / "report.md"))
    if (mirror := mirror_for(p.job_dir)) is not None:
        mirror.finish()  # uploads that failed on the way are retried; still failing: one line, kept locally
    return result_of(p, record, unfinished)


def _sweep(p: JobPlan, logger) -> None:
    """No container of the job outlives its run, even one whose removal failed while the engine
    was away (the trial that owned it has ended by now)."""
    try:
        n = remove_orphans(p.job_dir, p.job_id)
        if n:
            logger.warning("removed %d leftover container(s) of job %s", n, p.job_dir)
    except Exception as exc:  # noqa: BLE001 - the next command that touches the job removes them
        logger.warning("could not remove the job's leftover containers: %s", exc)


def _bundle_provenance(p: JobPlan, logger) -> dict[str, list[dict]]:
    """Prepare each model harness's bundle once up front and record what it was built from.

    A failure here is only logged: every trial of that harness then records it as invalid:
    harness, with the reason, which is where a reader looks for it.
    """
    out: dict[str, list[dict]] = {}
    for name in p.harness_refs:
        harness = p.harness(name)
        if harness.kind != "model":
            continue
        try:
            prepared = harness.prepare(p.dataset.tasks[0])
            out[name] = [x.model_dump(mode="json") for x in getattr(prepared, "provenance", [])]
        except Exception as exc:  # noqa: BLE001 - recorded per trial as invalid: harness
            logger.warning("harness %s could not be prepared: %s", name, exc)
    return out
