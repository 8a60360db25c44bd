"""Issue 10: in the Prefect UI an invalid trial was a green `Completed` task like a scored one
(issue 19: still green, only renamed `Invalid`, and the job run a green `Completed` like an
all-scored one),
stage runs were named `run-agent-884`, the report artifacts hung on a `report` child run (the
job's Artifacts tab was empty), there was no progress artifact and no tags. This runs a real job
flow (one scored, one invalid trial) and reads what the Prefect API shows for it."""

import pytest

from prefect_task_runs import final_task_runs
from task_factory import make_task


@pytest.mark.docker
def test_job_run_shows_verdicts_names_tags_and_artifacts(docker_ready, prefect_local, tmp_path):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterFlowRunId

    from flows.job.job_config import JobConfig
    from flows.job_flow import job_flow

    ds = tmp_path / "ds"
    make_task(ds, "good")
    make_task(ds, "noreward", test_sh="#!/bin/bash\necho 'no reward written'\n")
    cfg = JobConfig(dataset=str(ds), jobs_dir=str(tmp_path / "jobs"), job_name="UI_Job", concurrency=2)
    state = job_flow(**cfg.flow_parameters(), return_state=True)
    assert state.is_failed(), state  # invalid trials: a red run (issue 31)
    assert (state.name, state.message) == ("1 invalid", "2 trials: 1 scored, 1 invalid"), state
    run_id = state.state_details.flow_run_id

    with get_client(sync_client=True) as client:
        run = client.read_flow_run(run_id)
        task_runs = final_task_runs(client, run_id, at_least=14)
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(flow_run_id=ArtifactFilterFlowRunId(
            any_=[run_id])))
    by_name = {t.name: t for t in task_runs}

    good, bad = by_name["good.oracle.1"], by_name["noreward.oracle.1"]
    assert (good.state.type.value, good.state.name) == ("COMPLETED", "Completed")
    assert good.state.message == "scored 1"
    assert (bad.state.type.value, bad.state.name) == ("FAILED", "Invalid")  # red, and a filter on the name
    assert bad.state.message.startswith("invalid: verifier: "), bad.state.message
    for stage in ("prepare-harness", "build-image", "run-agent", "kill-process-groups", "run-verifier", "classify"):
        assert f"good.oracle.1 · {stage}" in by_name, sorted(by_name)
    tags = {"job:UI_Job", "dataset:ds", "harness:oracle"}
    assert tags <= set(run.tags), run.tags
    assert tags <= set(bad.tags), bad.tags
    # the trial's tags are its own, not its stages': a tag filter lists each trial once, and an
    # untagged stage skips Prefect's tag-concurrency round trip (issue 28)
    stages = [t for name, t in by_name.items() if " · " in name]
    assert stages and not any(t.tags for t in stages), {t.name: t.tags for t in stages if t.tags}

    by_key = {a.key: a for a in artifacts}
    assert {"ui-job-report", "ui-job-trials", "ui-job-progress"} <= set(by_key), sorted(by_key)
    progress = by_key["ui-job-progress"]
    assert progress.data == 100.0
    assert progress.description == "2/2 trials done: 1 scored, 1 invalid, 0 flagged"


def test_trial_log_lines_show_colour_codes_as_escapes_never_raw(tmp_path):
    """A harness's error line with terminal colours ended up verbatim in the run's log (and the
    terminal acted on it); it is shown with visible escapes, on one line."""
    import logging

    from report_fixtures import make_trial

    from flows.job.progress import LogListener

    record = make_trial("t", "codex", invalid="harness")
    record.validity.reason = "\x1b[31mError:\x1b[0m 401 Unauthorized\n"
    seen: list[str] = []

    class Keep(logging.Handler):
        def emit(self, rec):
            seen.append(rec.getMessage())

    logger = logging.getLogger("tbflow-test-listener")
    logger.addHandler(Keep())
    logger.setLevel(logging.INFO)
    LogListener(logger).trial_finished(record, 1, 1)
    assert seen[0].startswith("[1/1] t codex#1: invalid: harness (\\x1b[31mError:\\x1b[0m 401 Unauthorized) ["), seen
    assert "\x1b" not in seen[0] and "\n" not in seen[0] and "\\n" not in seen[0]


def test_a_failed_or_retried_stage_is_logged_as_text():
    """Prefect logs a failed or retried task's exception with %r: a build error showed literal
    \\n and colour codes in the UI."""
    from flows.trial_flow import EnvironmentRetry
    from tasks_lib.errors import ImageBuildError

    build = ImageBuildError("build-image", "docker build failed:\n\x1b[1mStep 1/2\x1b[0m")
    assert "%r" % build == "ImageBuildError: build-image: docker build failed:\nStep 1/2"

    exc = EnvironmentRetry("build-image", "retrying after: docker build failed:\n\x1b[31mERROR\x1b[0m: no such file")
    text = "%r" % exc
    assert text == "EnvironmentRetry: build-image: retrying after: docker build failed:\nERROR: no such file"
    assert "\x1b" not in text and "\\n" not in text
