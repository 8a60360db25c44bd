"""Issue 10: the Prefect UI shows a run's state message as one line, and a failed stage's message
(a build log's tail) read there as literal ``\\n`` with terminal colour codes. Every state message
tbflow sets or causes must be one readable line, with the detail kept in the logs and records.

A real job flow against a real Prefect server: an image build that fails with coloured,
multi-line output (a Failed build-image stage and an Invalid trial), a verifier that writes no
reward, a scored trial; then a job and a shard refused for bad input. Every state of every one
of those flow and task runs is read back through the Prefect client, as the UI reads them."""

import time

import pytest

from prefect_task_runs import final_task_runs
from task_factory import make_task

BAD_BUILD = ("FROM tbflow/base:bookworm\n"
             # red "boom" (ESC [ 31 m) and two lines, written in octal so that the build log's echo of
             # this line (in the message too) holds neither "[31m" nor a backslash-n of its own
             "RUN printf '\\033\\13331mboom\\033\\1330m\\012second line\\012'; exit 3\n")


def _unreadable(message: str | None) -> list[str]:
    m = message or ""
    return [what for what, bad in (("a line break", "\n" in m or "\r" in m), ("a literal \\n", "\\n" in m),
                                   ("a colour code", "\x1b" in m or "[31m" in m)) if bad]


@pytest.mark.docker
def test_every_state_message_of_a_job_is_one_readable_line(docker_ready, prefect_local, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterFlowRunId
    from prefect.settings import PREFECT_LOGGING_TO_API_ENABLED, temporary_settings

    from flows.job.job_config import JobConfig
    from flows.job_flow import job_flow
    from flows.shard_flow import shard_flow

    ds = tmp_path / "ds"
    make_task(ds, "good")
    make_task(ds, "badbuild", dockerfile=BAD_BUILD)
    make_task(ds, "noreward", test_sh="#!/bin/bash\nprintf '\\033[33mno reward\\033[0m\\nwritten\\n'\n")
    jobs = tmp_path / "jobs"
    cfg = JobConfig(dataset=str(ds), jobs_dir=str(jobs), job_name="msgs", concurrency=2, env_retries=0)
    with temporary_settings(updates={PREFECT_LOGGING_TO_API_ENABLED: True}):  # scripts/test.sh turns it off
        state = job_flow(**cfg.flow_parameters(), return_state=True)
    assert state.is_failed() and state.name == "2 invalid", state  # invalid trials: a red run (issue 31)
    job_run = state.state_details.flow_run_id
    bad = next(r for r in state.result(raise_on_failure=False).result.records if r.spec.task_name == "badbuild")
    assert "\n" in (bad.validity.reason or ""), bad.validity.reason  # the record keeps the detail

    refused_job = job_flow(**{**cfg.flow_parameters(), "dataset": str(tmp_path / "missing\nds"),
                              "job_name": "other"}, return_state=True)
    refused_shard = shard_flow(job_dir=str(tmp_path / "no-such-job"), trial_ids=["x.oracle.1"], return_state=True)
    runs = [job_run, refused_job.state_details.flow_run_id, refused_shard.state_details.flow_run_id]

    with get_client(sync_client=True) as client:
        task_runs = final_task_runs(client, job_run, at_least=18)
        seen = {}
        for r in runs:
            run = client.read_flow_run(r)
            for s in client.read_flow_run_states(r):
                seen[f"flow run {run.name}: {s.name}"] = s.message
        for t in task_runs:
            seen[f"task run {t.name}: {t.state.name}"] = t.state.message
        for _ in range(60):  # logs reach the server in batches
            logs = client.read_logs(log_filter=LogFilter(flow_run_id=LogFilterFlowRunId(any_=[job_run])), limit=200)
            if any("boom" in x.message for x in logs):
                break
            time.sleep(0.5)
        for r in runs[1:]:
            assert client.read_flow_run(r).state.name == "Refused"

    problems = {k: (v, _unreadable(v)) for k, v in seen.items() if _unreadable(v)}
    assert not problems, problems
    by_name = {t.name: t for t in task_runs}
    build = by_name["badbuild.oracle.1 · build-image"].state
    assert build.type.value == "FAILED" and "boom second line" in build.message, build.message
    trial = by_name["badbuild.oracle.1"].state
    assert trial.name == "Invalid" and "boom second line" in trial.message, trial.message
    assert by_name["noreward.oracle.1"].state.name == "Invalid"
    refusal = seen[next(k for k in seen if k.endswith(": Refused") and "missing" in (seen[k] or ""))]
    assert "missing ds" in refusal, refusal
    # the detail stays in the run's log, line by line (Prefect logs the failed stage's repr)
    assert any("boom\nsecond line" in x.message for x in logs), [x.message for x in logs if "boom" in x.message]
