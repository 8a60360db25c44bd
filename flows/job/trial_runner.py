"""Running a list of trials in this process, for a whole job or a shard: one ``trial`` task per
trial, started in the planned order with their images built ahead of them.

Two lanes share one loop on the flow's thread:

- **trials**: ``concurrency`` slots on a ``ThreadPoolTaskRunner``. A trial is submitted only when
  a slot is free, so the pool never queues anything and the start order is exactly the order of
  submission: the planned order (``--order``), except that a trial whose image is still being
  built lets the next ready trial go first rather than hold a slot idle.
- **builds**: images the queued trials need and do not find locally are pulled or built by a
  ``build-image-ahead`` task, in the order of the first trial that needs each, one task per tag.
  At least one build runs at a time; more only while trial slots stand idle for lack of a ready
  trial (at the start of a cold job that is every slot, as when each trial built its own image).

The loop waits with a timeout so Ctrl-C and SIGTERM reach it within ``POLL_SEC`` (the job flow
then stops the trial threads and removes the job's containers).

Ctrl-C, SIGTERM and Prefect's TerminationSignal reach only the main thread: on any of them the
stop flag is raised and this run's containers are removed before the pools wait for their threads,
so they end at once, unrecorded, and nothing keeps running.
"""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from typing import Any, Callable

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.task_runners import ThreadPoolTaskRunner
from prefect.utilities.annotations import quote

from flows.job.job_plan import JobPlan
from flows.job.run_ui import job_tags
from flows.trial_flow import trial_task_for
from tasks_lib.container.container_removal import remove_job_containers
from tasks_lib.errors import disk_full
from tasks_lib.job import trial_history
from tasks_lib.records.record_models import TrialRecord, TrialSpec
from tasks_lib.task.task_model import Task
from tasks_lib import interrupts
from tasks_lib.trial import image_ahead
POLL_SEC = 0.5


@task(name="build-image-ahead", task_run_name="{key}", cache_policy=NO_CACHE, persist_result=False)
def build_ahead_task(key: str, job_id: str, task_: Task, log_dir: Path) -> None:
    image_ahead.build_ahead(job_id, task_, log_dir)


def image_needs(todo: list[TrialSpec], tasks: dict[str, Task]) -> dict[str, str | None]:
    """trial id → the build it waits for (None: its image is present now)."""
    names = {s.task_name for s in todo}
    by_task = {n: (image_ahead.ahead_key(tasks[n]) if image_ahead.needs_build(tasks[n]) else None) for n in names}
    return {s.trial_id: by_task[s.task_name] for s in todo}


def builds_needed(todo: list[TrialSpec], needs: dict[str, str | None], tasks: dict[str, Task]) -> dict[str, Task]:
    """build key → the task to build it from, in the order of the first trial that needs each."""
    builds: dict[str, Task] = {}
    for s in todo:
        if (key := needs[s.trial_id]) is not None:
            builds.setdefault(key, tasks[s.task_name])
    return builds


def _take_result(fut, spec: TrialSpec, p: JobPlan, listener, unfinished: list[str]) -> None:  # noqa: ANN001
    """A finished trial: its record kept and shown, or its id noted as unfinished; a full disk raised."""
    outcome = fut.result(raise_on_failure=False)
    if disk_full(outcome):
        raise outcome  # stops every trial (run_trials); the CLI says what is full
    if isinstance(outcome, TrialRecord):
        trial_history.remember(outcome)
        p.recorded[spec.trial_id] = outcome
        listener.trial_finished(outcome, len(p.recorded), len(p.specs))
    else:
        unfinished.append(spec.trial_id)
        listener.trial_interrupted(spec.trial_id, f"{type(outcome).__name__}: {outcome}")


def _next_ready(queue: list[TrialSpec], needs: dict[str, str | None], built: set[str]) -> TrialSpec | None:
    """The first queued trial whose image is there (or its build has ended), if any."""
    return next((s for s in queue if needs[s.trial_id] is None or needs[s.trial_id] in built), None)


def run_trials(todo: list[TrialSpec], p: JobPlan, listener, cleanup: Callable[[], object] | None = None,
               recorded_elsewhere: Callable[[str], bool] | None = None) -> list[str]:
    """Run ``todo`` (in start order) in this process, ``concurrency`` at a time; return the ids
    left unrecorded.

    ``cleanup`` removes this run's containers when it is interrupted (default: every container of
    the job on this engine; a shard passes its own flow run's, as a sibling shard may share the engine).
    ``recorded_elsewhere(trial_id)`` is asked just before a trial starts; a trial it says another run
    recorded meanwhile is not started (a shard passes it: a machine taken for lost may still finish
    trials after its shard was re-submitted).
    """
    cleanup = cleanup or (lambda: remove_job_containers(p.job_id))
    interrupts.clear()
    unfinished: list[str] = []
    tasks = {t.name: t for t in p.dataset.tasks}
    needs = image_needs(todo, tasks)
    builds = builds_needed(todo, needs, tasks)
    to_build = list(builds)
    built: set[str] = set()
    queue = list(todo)
    trial = {h: trial_task_for(p.job_dir, p.config.env_retries, h, job_tags(p)) for h in p.harness_refs}
    slots = p.config.concurrency
    running: dict = {}
    building: dict = {}
    runner: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=slots)
    lane: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=slots)
    with runner, lane:
        try:
            while queue or running:
                while len(running) < slots and (ready := _next_ready(queue, needs, built)) is not None:
                    queue.remove(ready)
                    if recorded_elsewhere is not None and recorded_elsewhere(ready.trial_id):
                        continue
                    fut = runner.submit(trial[ready.harness], {"spec": quote(ready), "job_dir": str(p.job_dir)})
                    running[fut.wrapped_future] = (fut, ready)
                    listener.trial_started(ready.trial_id)
                while to_build and len(building) < max(1, slots - len(running)):
                    key = to_build.pop(0)
                    fut = lane.submit(build_ahead_task, {"key": key, "job_id": p.job_id, "task_": builds[key],
                                                         "log_dir": p.job_dir / ".builds"})
                    building[fut.wrapped_future] = (fut, key)
                done, _ = concurrent.futures.wait(set(running) | set(building), timeout=POLL_SEC,
                                                  return_when=concurrent.futures.FIRST_COMPLETED)
                for w in done:
                    if w in building:
                        built.add(building.pop(w)[1])  # failed or not: its trials now take the result
                    else:
                        fut, spec = running.pop(w)
                        _take_result(fut, spec, p, listener, unfinished)
        except BaseException:
            # Ctrl-C / SIGTERM / TerminationSignal reach only this thread. Stop the trial and build
            # threads and remove their containers *before* the runners wait for those threads, so
            # they end at once, unrecorded, and nothing of this job keeps running.
            interrupts.request_stop()
            cleanup()
            raise
        finally:
            image_ahead.forget(p.job_id)
    return unfinished
