"""Running a list of trials in this process: one ``trial`` task per trial on a bounded thread
pool (the topology measured fastest, docs in flows/trial_flow.py), for a whole job or a shard.

Ctrl-C, SIGTERM and Prefect's TerminationSignal reach only the main thread: on any of them the
stop flag is raised and this run's containers are removed before the pool waits for its threads,
so they end at once, unrecorded, and nothing keeps running.
"""

from __future__ import annotations

import concurrent.futures
from typing import Any, Callable

from prefect.task_runners import ThreadPoolTaskRunner

from flows.job_plan import JobPlan
from flows.trial_flow import trial_task_for
from tasks_lib.errors import disk_full
from tasks_lib.trial import interrupts
from tasks_lib.job.records import TrialRecord, TrialSpec
from tasks_lib.container.sandbox import remove_job_containers


def run_trials(todo: list[TrialSpec], p: JobPlan, listener, cleanup: Callable[[], object] | None = None) -> list[str]:
    """Run ``todo`` in this process, ``concurrency`` at a time; return the ids left unrecorded.

    ``cleanup`` removes this run's containers when it is interrupted (default: every container of
    the job on this engine; a shard passes its own flow run's, as a sibling shard may share the engine).
    """
    cleanup = cleanup or (lambda: remove_job_containers(p.job_id))
    interrupts.clear()
    unfinished: list[str] = []
    trial = {h: trial_task_for(p.job_dir, p.config.env_retries, h) for h in p.config.harnesses}
    total = len(p.specs)
    pool: ThreadPoolTaskRunner[Any] = ThreadPoolTaskRunner(max_workers=p.config.concurrency)
    with pool as runner:
        try:
            futures = {runner.submit(trial[s.harness], {"spec": s, "job_dir": str(p.job_dir)}): s for s in todo}
            for fut in _as_completed(list(futures)):
                spec = futures[fut]
                outcome = fut.result(raise_on_failure=False)
                if disk_full(outcome):
                    raise outcome  # stops every trial (below); the CLI says what is full
                if isinstance(outcome, TrialRecord):
                    p.recorded[spec.trial_id] = outcome
                    listener.trial_finished(outcome, len(p.recorded), total)
                else:
                    unfinished.append(spec.trial_id)
                    listener.trial_interrupted(spec.trial_id, f"{type(outcome).__name__}: {outcome}")
        except BaseException:
            # Ctrl-C / SIGTERM / TerminationSignal reach only this thread. Stop the trial threads
            # and remove their containers *before* the runner waits for those threads, so they
            # end at once, unrecorded, and nothing of this job keeps running.
            interrupts.request_stop()
            cleanup()
            raise
    return unfinished


def _as_completed(futures: list, poll_sec: float = 0.5):
    """Yield Prefect futures as they finish, waking up every ``poll_sec``.

    An untimed wait (as in ``prefect.futures.as_completed``) can hold off Ctrl-C until the next
    trial finishes; a timed one lets the signal stop the job within ``poll_sec``.
    """
    by_wrapped = {f.wrapped_future: f for f in futures}
    pending = set(by_wrapped)
    while pending:
        done, pending = concurrent.futures.wait(pending, timeout=poll_sec,
                                                return_when=concurrent.futures.FIRST_COMPLETED)
        for w in done:
            yield by_wrapped[w]
