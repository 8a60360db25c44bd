"""Prefect runs the job flow's on_cancellation/on_crashed hook in the runner or worker process
after the flow is gone; it must remove that job's containers (by label) and nothing else.

Prefect itself calls the hooks here: a flow carrying the job flow's own hook list (and the job
flow's parameter names) crashes, and Prefect hands the hook its real ``FlowRun``. Calling the
hook by hand with a stand-in object is the call shape that once hid a wrong parameter name
(test_cancel_via_api_removes_containers.py has the runner's keyword call).
"""

import uuid

import pytest
from prefect import flow
from prefect.runtime import flow_run as current_run

from flows.job_flow import job_flow
from tasks_lib.container.docker_client import LABEL_FLOW_RUN, LABEL_JOB, LABEL_ROOT, LABEL_TRIAL
from tasks_lib.store.job_store import JobStore
from tasks_lib.records.record_models import JobRecord


class _Crash(BaseException):
    """What a crash looks like from inside the flow (a BaseException: Prefect marks it Crashed)."""


def _sleeper(client, labels: dict[str, str]):
    return client.containers.run("tbflow/base:bookworm", ["sleep", "infinity"], detach=True, init=True,
                                 network_mode="none", labels=labels)


def _crashing_job(body):
    """A flow with the job flow's hooks and parameter names whose body crashes after ``body``."""

    def job(dataset: str, jobs_dir: str | None = None, job_name: str | None = None) -> None:
        body()
        raise _Crash

    return flow(name="tbflow-hook-test", on_crashed=job_flow.on_crashed_hooks,
                on_cancellation=job_flow.on_cancellation_hooks)(job)


def _ids(client) -> set[str]:
    return {c.id for c in client.containers.list(all=True, ignore_removed=True)}


def _remove(*containers) -> None:
    for c in containers:
        try:
            c.remove(force=True)
        except Exception:  # noqa: BLE001 - already gone: the hook did its job
            pass


def test_hook_removes_only_this_jobs_containers(docker_ready, prefect_local, tmp_path):
    job_id = f"hookjob-{uuid.uuid4().hex[:10]}"
    store = JobStore(tmp_path / "jobs" / "j")
    store.write_job(JobRecord(job_id=job_id, job_name="j", dataset="x", config={}, tbflow_version="t",
                              harness_versions={}, started_at="2026-01-01T00:00:00Z"))
    mine = _sleeper(docker_ready, {LABEL_ROOT: "1", LABEL_JOB: job_id, LABEL_TRIAL: "t.oracle.1"})
    other = _sleeper(docker_ready, {"tbflow.test": f"other-{job_id}"})
    try:
        assert job_flow.on_crashed_hooks and job_flow.on_cancellation_hooks
        with pytest.raises(_Crash):
            _crashing_job(lambda: None)(dataset="x", jobs_dir=str(tmp_path / "jobs"), job_name="j")
        ids = _ids(docker_ready)
        assert mine.id not in ids
        assert other.id in ids
    finally:
        _remove(mine, other)


def test_hook_finds_an_unnamed_jobs_containers_by_flow_run(docker_ready, prefect_local):
    started = []

    def start_a_trial_container() -> None:
        started.append(_sleeper(docker_ready, {LABEL_ROOT: "1", LABEL_FLOW_RUN: str(current_run.id),
                                               LABEL_TRIAL: "t.nop.1"}))

    try:
        with pytest.raises(_Crash):
            _crashing_job(start_a_trial_container)(dataset="x")  # no job_name: only the flow-run label
        [mine] = started
        assert mine.id not in _ids(docker_ready)
    finally:
        _remove(*started)
