"""Prefect runs the job flow's on_cancellation/on_crashed hook in the runner or worker process
after the flow is gone; it must remove that job's containers (by label) and nothing else."""

import types

from flows.job_flow import _cleanup_hook
from tasks_lib.container.docker_client import LABEL_FLOW_RUN, LABEL_JOB, LABEL_ROOT, LABEL_TRIAL
from tasks_lib.job.job_store import JobStore
from tasks_lib.job.records import JobRecord


def test_hook_removes_only_this_jobs_containers(docker_ready, tmp_path):
    store = JobStore(tmp_path / "jobs" / "j")
    store.write_job(JobRecord(job_id="hookjob123", job_name="j", dataset="x", config={}, tbflow_version="t",
                              harness_versions={}, started_at="2026-01-01T00:00:00Z"))
    mine = docker_ready.containers.run("tbflow/base:bookworm", ["sleep", "infinity"], detach=True, init=True,
                                       network_mode="none",
                                       labels={LABEL_ROOT: "1", LABEL_JOB: "hookjob123", LABEL_TRIAL: "t.oracle.1"})
    other = docker_ready.containers.run("tbflow/base:bookworm", ["sleep", "infinity"], detach=True, init=True,
                                        network_mode="none", labels={"tbflow.test": "other-job"})
    try:
        run = types.SimpleNamespace(id="not-this-run", parameters={
            "dataset": "x", "jobs_dir": str(tmp_path / "jobs"), "job_name": "j"})
        _cleanup_hook(None, run, None)
        ids = {c.id for c in docker_ready.containers.list(all=True, ignore_removed=True)}
        assert mine.id not in ids
        assert other.id in ids
    finally:
        for c in (mine, other):
            try:
                c.remove(force=True)
            except Exception:
                pass


def test_hook_finds_an_unnamed_jobs_containers_by_flow_run(docker_ready):
    mine = docker_ready.containers.run("tbflow/base:bookworm", ["sleep", "infinity"], detach=True, init=True,
                                       network_mode="none",
                                       labels={LABEL_ROOT: "1", LABEL_FLOW_RUN: "run-123", LABEL_TRIAL: "t.nop.1"})
    try:
        run = types.SimpleNamespace(id="run-123", parameters={"dataset": "x"})  # no job_name
        _cleanup_hook(None, run, None)
        assert mine.id not in {c.id for c in docker_ready.containers.list(all=True, ignore_removed=True)}
    finally:
        try:
            mine.remove(force=True)
        except Exception:
            pass
