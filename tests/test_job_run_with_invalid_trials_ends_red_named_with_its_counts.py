"""Issue 31: in the Prefect UI a job with invalid trials was a green ``Completed`` named "Not all
scored", like a clean one, and a flagged trial a plain green "scored 1". Now the job run ends a red
``Failed`` named with its counts ("1 invalid, 1 flagged") and tagged ``tbflow:invalid`` /
``tbflow:flagged`` (the UI filters on tags), unless ``TBFLOW_INVALID_JOB_STATE=completed`` or a
``fail_on_invalid`` threshold that was not exceeded says the job is fine as it is; a flagged
trial's task run is named ``Flagged``. The rules are pure (records in, states out); one real run
checks the state, the tags and the task runs on the server.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

import pytest
from report_fixtures import make_trial
from task_factory import make_task

from flows.job.job_result import JobResult
from flows.job.job_verdict import NotAllScored, final_state, verdict_of
from flows.trial_flow import verdict_state
from tasks_lib.records.record_models import TrialFlag
from tasks_lib.report.invalid_gate import parse_threshold


def _result(records, planned: int) -> JobResult:
    return JobResult(job_id="j1", job_name="night", dataset="ds", config={}, tbflow_version="0",
                     harness_versions={}, started_at=datetime.now(timezone.utc),
                     trial_ids=[f"t{i}" for i in range(planned)], job_dir="/jobs/night", records=records,
                     unfinished=[])


def _flagged(task: str, **kw):
    r = make_trial(task, "oracle", **kw)
    r.flags = [TrialFlag(kind="tampering", message="reward file changed outside test.sh")]
    return r


def test_invalid_trials_end_the_run_red_named_with_the_counts():
    result = _result([make_trial("a"), make_trial("b", invalid="verifier"), _flagged("c")], planned=3)
    verdict = verdict_of(result, None)
    state = final_state(result, verdict, keep_completed=False)
    assert (state.type.value, state.name) == ("FAILED", "1 invalid, 1 flagged")
    assert state.message == "3 trials: 2 scored, 1 invalid, 1 flagged"
    assert isinstance(state.data, NotAllScored) and state.data.result is result
    assert verdict.attention_tags() == ["tbflow:invalid", "tbflow:flagged"]


def test_configured_or_tolerated_stays_completed(monkeypatch):
    result = _result([make_trial("a"), make_trial("b", invalid="verifier")], planned=2)
    monkeypatch.setenv("TBFLOW_INVALID_JOB_STATE", "completed")
    assert final_state(result, verdict_of(result, None)).type.value == "COMPLETED"
    monkeypatch.delenv("TBFLOW_INVALID_JOB_STATE")
    assert final_state(result, verdict_of(result, None)).type.value == "FAILED"
    within = final_state(result, verdict_of(result, parse_threshold("60%")))
    assert (within.type.value, within.name) == ("COMPLETED", "Not all scored")


def test_all_scored_but_flagged_is_completed_and_named_apart():
    result = _result([make_trial("a"), _flagged("b")], planned=2)
    verdict = verdict_of(result, None)
    state = final_state(result, verdict)
    assert (state.type.value, state.name, state.message) == ("COMPLETED", "1 flagged", "2 of 2 trials scored, "
                                                             "1 flagged")
    assert verdict.attention_tags() == ["tbflow:flagged"]
    trial = verdict_state(_flagged("b"))
    assert (trial.type.value, trial.name, trial.message) == ("COMPLETED", "Flagged", "scored 1; flagged: tampering")
    assert verdict_state(make_trial("a")).name == "Completed"


@pytest.mark.docker
def test_a_real_run_is_red_tagged_and_its_trials_marked(docker_ready, prefect_local, tmp_path):
    from prefect.client.orchestration import get_client

    from flows.job.job_config import JobConfig
    from flows.job_flow import job_flow

    ds = tmp_path / "ds"
    make_task(ds, "good")
    make_task(ds, "noreward", test_sh="#!/bin/bash\necho 'no reward written'\n")
    cfg = JobConfig(dataset=str(ds), jobs_dir=str(tmp_path / "jobs"), job_name="red-job", concurrency=2)
    state = job_flow(**cfg.flow_parameters(), return_state=True)
    assert (state.type.value, state.name, state.message) == ("FAILED", "1 invalid", "2 trials: 1 scored, 1 invalid")
    result = state.result(raise_on_failure=False).result
    assert sorted(r.validity.status for r in result.records) == ["invalid", "scored"]
    with get_client(sync_client=True) as client:
        run = client.read_flow_run(state.state_details.flow_run_id)
        for _ in range(120):
            if run.state is not None and run.state.is_final():
                break
            time.sleep(0.5)
            run = client.read_flow_run(run.id)
    assert run.name == "red-job", run.name  # named after the job, not a random pair of words
    assert (run.state.type.value, run.state.name) == ("FAILED", "1 invalid")
    assert "tbflow:invalid" in run.tags and "job:red-job" in run.tags, run.tags
