"""Issue 31: in the Prefect UI, "Failed" showed 8 rows for 2 invalid trials, because every try of a
stage that the trial then retried (an image build) ended its task run Failed, and the UI's filters
select state types. A retried try's stage now ends ``Retried`` (type CANCELLED); the last try's
failing stage stays Failed (it is the evidence), next to its Invalid trial.

A real job flow on a real Prefect server: one task whose image build always fails (3 tries with
``--env-retries 2``), one whose first build fails and second succeeds; the task runs are read back
through the Prefect client, as the UI reads them."""

import logging
import time
import uuid

import pytest

from prefect_task_runs import final_task_runs
from task_factory import first_build_fails, make_task

BROKEN = "FROM tbflow/base:bookworm\nRUN echo always-broken && false\n"


def _runs_of(task_runs, trial: str, stage: str | None = None) -> list:
    name = trial if stage is None else f"{trial} · {stage}"
    return sorted((t for t in task_runs if t.name == name), key=lambda t: t.expected_start_time)


@pytest.mark.docker
def test_failed_lists_the_invalid_trial_and_its_last_build_never_a_retried_try(docker_ready, prefect_local, tmp_path,
                                                                                monkeypatch):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import LogFilter, LogFilterTaskRunId
    from prefect.settings import PREFECT_LOGGING_TO_API_ENABLED, temporary_settings

    from flows.job.job_config import JobConfig
    from flows.job_flow import job_flow

    ds = tmp_path / "ds"
    make_task(ds, "broken", dockerfile=BROKEN)
    make_task(ds, "flaky", dockerfile=f"FROM tbflow/base:bookworm\nWORKDIR /app\nLABEL nonce={uuid.uuid4().hex}\n")
    flaky_calls = first_build_fails(monkeypatch, "flaky")  # injected fault: the daemon hiccups once
    cfg = JobConfig(dataset=str(ds), jobs_dir=str(tmp_path / "jobs"), job_name="retried", concurrency=2,
                    env_retries=2)
    with temporary_settings(updates={PREFECT_LOGGING_TO_API_ENABLED: True}):  # scripts/test.sh turns it off
        state = job_flow(**cfg.flow_parameters(), return_state=True)
    assert state.is_failed() and state.name == "1 invalid", state
    records = {r.spec.task_name: r for r in state.result(raise_on_failure=False).result.records}
    broken, flaky = records["broken"], records["flaky"]
    assert (broken.validity.status, broken.validity.kind) == ("invalid", "environment")  # the record as before
    assert "after 3 tries" in broken.validity.reason and len(broken.env_retry_errors) == 2, broken.validity
    assert (flaky.validity.status, flaky.validity.reward) == ("scored", 1.0) and len(flaky_calls) == 2
    assert flaky.env_retry_errors == ["build-image: docker build failed: injected hiccup"]

    # broken: trial + 3 tries x (prepare-harness, build-image); flaky: trial + 2 + 6 stages
    with get_client(sync_client=True) as client:
        task_runs = final_task_runs(client, state.state_details.flow_run_id, at_least=16)
        retried_ids = [t.id for t in task_runs if t.state.name == "Retried"]
        for _ in range(60):  # logs reach the server in batches
            logs = client.read_logs(log_filter=LogFilter(task_run_id=LogFilterTaskRunId(any_=retried_ids)))
            retried_lines = [x for x in logs if x.message.startswith("Finished Retried: ")]
            if len(retried_lines) >= 3:
                break
            time.sleep(0.5)
    # the engine logs every end but Completed as an ERROR; a retried try is none
    assert [x.level for x in retried_lines] == [logging.INFO] * 3, [(x.level, x.message) for x in retried_lines]
    failed = sorted(t.name for t in task_runs if t.state.type.value == "FAILED")
    assert failed == ["broken.oracle.1", "broken.oracle.1 · build-image"], failed

    builds = _runs_of(task_runs, "broken.oracle.1", "build-image")
    assert [(b.state.type.value, b.state.name) for b in builds] == [
        ("CANCELLED", "Retried"), ("CANCELLED", "Retried"), ("FAILED", "Failed")], [b.state for b in builds]
    assert builds[0].state.message.startswith("retried (2 retries left): build-image: docker build failed"), \
        builds[0].state.message
    assert builds[1].state.message.startswith("retried (1 retry left): "), builds[1].state.message
    assert "always-broken" in builds[2].state.message, builds[2].state.message
    assert _runs_of(task_runs, "broken.oracle.1")[0].state.name == "Invalid"

    flaky_runs = [t for t in task_runs if t.name.startswith("flaky.oracle.1")]
    assert len(flaky_runs) == 9 and not [t.name for t in flaky_runs if t.state.type.value == "FAILED"]
    flaky_builds = _runs_of(task_runs, "flaky.oracle.1", "build-image")
    assert [(b.state.type.value, b.state.name) for b in flaky_builds] == [
        ("CANCELLED", "Retried"), ("COMPLETED", "Completed")], [b.state for b in flaky_builds]
    assert flaky_builds[0].state.message == "retried (2 retries left): build-image: docker build failed: injected hiccup"
    assert _runs_of(task_runs, "flaky.oracle.1")[0].state.type.value == "COMPLETED"
