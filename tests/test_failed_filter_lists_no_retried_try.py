"""Issue 31: in the Prefect UI, "Failed" showed 8 rows for 2 invalid trials, because every try of a
stage that the trial then retried (an image build) ended its task run Failed, and the UI's filters
select state types. A retried try's stage now ends ``Retried`` (type CANCELLED); the last try's
failing stage stays Failed (it is the evidence), next to its Invalid trial.

A real job flow on a real Prefect server: one task whose image build always fails (3 tries with
``--env-retries 2``), one whose first build fails and second succeeds, one whose first verifier
run hits an engine error (a stage after the agent: retried only because the agent did not stop its
container), one whose agent stops its own container (its result: the failed stage stays Failed,
nothing is retried); the task runs are read back through the Prefect client, as the UI reads them."""

import logging
import time
import uuid

import pytest

import flows.trial_flow as trial_flow
from prefect_task_runs import final_task_runs
from task_factory import first_build_fails, make_task
from tasks_lib.errors import ContainerError

BROKEN = "FROM tbflow/base:bookworm\nRUN echo always-broken && false\n"


def _runs_of(task_runs, trial: str, stage: str | None = None) -> list:
    name = trial if stage is None else f"{trial} · {stage}"
    return sorted((t for t in task_runs if t.name == name), key=lambda t: t.expected_start_time)


def _states(runs) -> list[tuple[str, str]]:
    return [(r.state.type.value, r.state.name) for r in runs]


def _first_verifier_run_fails(monkeypatch, task_name: str) -> list[int]:
    """Injected fault: the engine fails the first verifier run of ``task_name`` (its container runs on)."""
    real, calls = trial_flow.verify, []

    def flaky_verifier(sandbox, task, *args, **kwargs):
        if task.path.name == task_name:
            calls.append(1)
            if len(calls) == 1:
                raise ContainerError("run-verifier", "docker exec failed: injected hiccup")
        return real(sandbox, task, *args, **kwargs)

    monkeypatch.setattr(trial_flow, "verify", flaky_verifier)
    return calls


def _log_lines(client, task_runs, starting: str, expected: int) -> tuple[list, list]:
    """The log lines of ``task_runs`` that start with ``starting`` (once ``expected`` of them reached
    the server, which gets logs in batches), and all their lines."""
    from prefect.client.schemas.filters import LogFilter, LogFilterTaskRunId

    logs: list = []
    for _ in range(60):
        logs = client.read_logs(log_filter=LogFilter(task_run_id=LogFilterTaskRunId(any_=[t.id for t in task_runs])))
        if sum(1 for x in logs if x.message.startswith(starting)) >= expected:
            break
        time.sleep(0.5)
    return [x for x in logs if x.message.startswith(starting)], logs


def _run_the_job(ds, jobs, monkeypatch):
    """The job flow's state and records: ``broken`` always fails its build, ``flaky`` once, ``hiccup``
    its first verifier run, and ``kill-pid-1``'s agent stops its own container."""
    from prefect.settings import PREFECT_LOGGING_TO_API_ENABLED, temporary_settings

    from flows.job.job_config import JobConfig
    from flows.job_flow import job_flow

    make_task(ds, "broken", dockerfile=BROKEN)
    make_task(ds, "flaky", dockerfile=f"FROM tbflow/base:bookworm\nWORKDIR /app\nLABEL nonce={uuid.uuid4().hex}\n")
    make_task(ds, "hiccup")
    make_task(ds, "kill-pid-1", solve="kill 1\nsleep 5\n")
    flaky_calls = first_build_fails(monkeypatch, "flaky")  # injected fault: the daemon hiccups once
    verifier_calls = _first_verifier_run_fails(monkeypatch, "hiccup")
    cfg = JobConfig(dataset=str(ds), jobs_dir=str(jobs), job_name="retried", concurrency=2, env_retries=2)
    with temporary_settings(updates={PREFECT_LOGGING_TO_API_ENABLED: True}):  # scripts/test.sh turns it off
        state = job_flow(**cfg.flow_parameters(), return_state=True)
    assert state.is_failed() and state.name == "1 invalid, 1 flagged", state
    records = {r.spec.task_name: r for r in state.result(raise_on_failure=False).result.records}
    assert (len(flaky_calls), len(verifier_calls)) == (2, 2)
    return state, records


@pytest.mark.docker
def test_failed_lists_the_invalid_trial_and_its_last_build_never_a_retried_try(docker_ready, prefect_local, tmp_path,
                                                                                monkeypatch):
    from prefect.client.orchestration import get_client

    state, records = _run_the_job(tmp_path / "ds", tmp_path / "jobs", monkeypatch)
    broken, flaky, hiccup, killer = (records[n] for n in ("broken", "flaky", "hiccup", "kill-pid-1"))
    assert (broken.validity.status, broken.validity.kind) == ("invalid", "environment")  # the record as before
    assert "after 3 tries" in broken.validity.reason and len(broken.env_retry_errors) == 2, broken.validity
    assert (flaky.validity.status, flaky.validity.reward) == ("scored", 1.0)
    assert flaky.env_retry_errors == ["build-image: docker build failed: injected hiccup"]
    assert (hiccup.validity.status, hiccup.validity.reward) == ("scored", 1.0)
    assert hiccup.env_retry_errors == ["run-verifier: docker exec failed: injected hiccup"] and not hiccup.flags
    assert (killer.validity.reward, [f.kind for f in killer.flags], killer.env_retry_errors) == (
        0.0, ["broke-container"], [])

    # broken: trial + 3 x (prepare-harness, build-image); flaky: trial + 2 + 6; hiccup: trial + 5 + 6;
    # kill-pid-1: trial + 6
    with get_client(sync_client=True) as client:
        task_runs = final_task_runs(client, state.state_details.flow_run_id, at_least=35)
        retried_lines, _ = _log_lines(client, [t for t in task_runs if t.state.name == "Retried"],
                                      "Finished Retried: ", expected=4)
        invalid_lines, trial_logs = _log_lines(client, _runs_of(task_runs, "broken.oracle.1"), "Finished Invalid: ", 1)
    failed = sorted(t.name for t in task_runs if t.state.type.value == "FAILED")
    # the agent's own doing is its result, not retried: its failed stage is the evidence, left red
    assert failed == ["broken.oracle.1", "broken.oracle.1 · build-image", "kill-pid-1.oracle.1 · run-verifier"], failed

    builds = _runs_of(task_runs, "broken.oracle.1", "build-image")
    assert _states(builds) == [("CANCELLED", "Retried"), ("CANCELLED", "Retried"), ("FAILED", "Failed")], builds
    assert builds[0].state.message.startswith("retried (2 retries left): build-image: docker build failed"), \
        builds[0].state.message
    assert builds[1].state.message.startswith("retried (1 retry left): "), builds[1].state.message
    assert "always-broken" in builds[2].state.message, builds[2].state.message
    assert _runs_of(task_runs, "broken.oracle.1")[0].state.name == "Invalid"

    for record, stage, runs in ((flaky, "build-image", 9), (hiccup, "run-verifier", 12)):
        trial = record.trial_id
        assert len([t for t in task_runs if t.name.startswith(trial)]) == runs, trial
        tries = _runs_of(task_runs, trial, stage)
        assert _states(tries) == [("CANCELLED", "Retried"), ("COMPLETED", "Completed")], tries
        assert tries[0].state.message == f"retried (2 retries left): {record.env_retry_errors[0]}", tries[0].state
        assert _runs_of(task_runs, trial)[0].state.type.value == "COMPLETED"
    killer_runs = [t for t in task_runs if t.name.startswith(killer.trial_id)]
    assert len(killer_runs) == 7 and not [t for t in killer_runs if t.state.name == "Retried"], killer_runs
    assert _states(_runs_of(task_runs, killer.trial_id)) == [("COMPLETED", "Flagged")]
    # the engine logs every end but Completed as an ERROR; a retried try is none
    assert [x.level for x in retried_lines] == [logging.INFO] * 4, [(x.level, x.message) for x in retried_lines]
    # the engine's "Retries are exhausted" line held the trial's whole record as a Python repr
    assert invalid_lines and not [x.message for x in trial_logs if "TrialRecord(" in x.message], trial_logs
