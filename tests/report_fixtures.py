"""Build job directories for report tests from records made in Python (no Docker, no Prefect).

Validity is computed with the real ``classify`` from the stage outcomes, so a fixture trial looks
like one the runner would record: a scored trial has agent and verifier outcomes, a harness
failure has zero tokens, an environment failure a ``StageError`` with its build log, a verifier
failure no reward.
"""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from pathlib import Path

from tasks_lib.trial.trial_verdict import classify
from tasks_lib.store.job_store import JobStore, write_atomic
from tasks_lib.records.record_models import (
                                             AgentOutcome,
                                             JobRecord,
                                             StageError,
                                             TaskProblemRecord,
                                             TrialRecord,
                                             TrialSpec,
                                             Usage,
                                             Validity,
                                             VerifierOutcome,
                                             )

T0 = datetime(2025, 3, 1, 12, 0, 0, tzinfo=timezone.utc)
REFERENCE = {"oracle", "nop"}


def trial_id(task: str, harness: str, attempt: int) -> str:
    return f"{task}__{harness}__{attempt}"


def make_trial(task: str, harness: str = "oracle", attempt: int = 1, *, reward: float | None = 1.0,
               invalid: str | None = None, reason: str | None = None, duration: float = 12.5,
               usage: Usage | None = None, model: str | None = None, job_id: str = "job-1",
               verifier_timeout: float = 600.0, agent_timeout: float = 900.0) -> TrialRecord:
    """One finished trial. ``invalid`` is None (scored with ``reward``) or an invalid kind."""
    kind = "reference" if harness in REFERENCE else "model"
    if kind == "model" and usage is None and invalid != "harness":
        usage = Usage(input_tokens=1000, output_tokens=200, cost_usd=None)
    agent = AgentOutcome(exit_code=0, timeout_sec=agent_timeout, duration_sec=duration * 0.8,
                         usage=usage if invalid != "harness" else Usage(),
                         stdout_log="agent/stdout.txt", stderr_log="agent/stderr.txt")
    verifier = VerifierOutcome(exit_code=0, timeout_sec=verifier_timeout, duration_sec=1.0, reward=reward,
                               rewards={"reward": reward} if reward is not None else {},
                               stdout_log="verifier/test-stdout.txt")
    error = None
    if invalid == "environment":
        error = StageError(stage="build-image", kind="environment",
                           message=reason or "docker build failed: exit 1", evidence=f"../../builds/{task}.log")
        agent = verifier = None
    elif invalid == "verifier":
        verifier = verifier.model_copy(update={"reward": None, "rewards": {},
                                               "problem": reason or "no reward file written"})
    elif invalid == "harness" and kind == "reference":
        error = StageError(stage="prepare-harness", kind="harness", message=reason or "task has no solution/",
                           evidence=None)
        agent = verifier = None
    if invalid == "interrupted":
        validity = Validity(status="invalid", kind="interrupted", reason=reason or "cancelled by the user",
                            evidence="agent/stderr.txt")
    else:
        validity = classify(kind, error, agent, verifier)
    assert (validity.status == "scored") == (invalid is None), validity
    start = T0 + timedelta(minutes=attempt)
    return TrialRecord(
        spec=TrialSpec(job_id=job_id, trial_id=trial_id(task, harness, attempt), task_name=task,
                       task_path=f"tasks/{task}", harness=harness, attempt=attempt, model=model),
        harness_kind=kind, harness_version="1.0.0" if kind == "reference" else "0.9.1",
        started_at=start, ended_at=start + timedelta(seconds=duration), duration_sec=duration,
        error=error, agent=agent, verifier=verifier, validity=validity,
    )


def make_job(trials: list[TrialRecord], *, job_id: str = "job-1", name: str = "demo-job",
             harnesses: list[str] | None = None, attempts: int = 1, dataset: str = "examples/tasks",
             model: str | None = None, extra_trial_ids: list[str] = (),
             task_problems: list[TaskProblemRecord] = (), **config: object) -> JobRecord:
    hs = harnesses or sorted({t.spec.harness for t in trials}) or ["oracle"]
    return JobRecord(
        job_id=job_id, job_name=name, dataset=dataset,
        config={"dataset": dataset, "harnesses": hs, "model": model, "concurrency": 4, "attempts": attempts,
                "include": [], "exclude": [], "n_tasks": None, "jobs_dir": "jobs", "job_name": name, **config},
        tbflow_version="0.1.0",
        harness_versions={h: ("1.0.0" if h in REFERENCE else "0.9.1") for h in hs},
        started_at=T0, ended_at=T0 + timedelta(hours=1, minutes=3),
        trial_ids=[t.trial_id for t in trials] + list(extra_trial_ids),
        task_problems=list(task_problems),
    )


def write_job_dir(root: Path, job: JobRecord, trials: list[TrialRecord],
                  logs: dict[str, dict[str, str]] | None = None, default_logs: bool = True) -> Path:
    """Write ``job.json``, every ``trial.json`` and log files; returns the job directory.

    ``logs`` maps a trial id (or ``"<job>"`` for job-relative files) to ``{relative path: text}``.
    With ``default_logs`` each trial gets a small verifier output and agent stderr, and each
    environment failure its build log.
    """
    job_dir = root / job.job_name
    store = JobStore(job_dir)
    store.write_job(job)
    for t in trials:
        store.write_trial(t)
        tdir = store.trial_dir(t.trial_id)
        if default_logs:
            reward = t.validity.reward
            write_atomic(tdir / "verifier/test-stdout.txt",
                         f"collecting tests for {t.spec.task_name}\n"
                         + ("1 passed\n" if reward and reward >= 1
                            else "FAILED test_outputs.py::test_file - assert 0\n"))
            write_atomic(tdir / "agent/stderr.txt", "agent stderr\nHTTP 401 Unauthorized\n")
            if t.error and t.error.kind == "environment":
                write_atomic(job_dir / "builds" / f"{t.spec.task_name}.log",
                             "Step 3/5 : RUN apt-get install -y foo\nE: Unable to locate package foo\n")
    for key, files in (logs or {}).items():
        base = job_dir if key == "<job>" else store.trial_dir(key)
        for rel, text in files.items():
            write_atomic(base / rel, text)
    return job_dir
