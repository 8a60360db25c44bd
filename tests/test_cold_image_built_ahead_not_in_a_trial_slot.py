"""A cold image is built by the job's build lane while trials with ready images run: the trial
that needs it does not take a slot until it is built, the tag is built once for all its trials,
and the build is recorded (log included) in the first trial that used it."""

import json
import uuid
from datetime import datetime, timezone

import pytest

from task_factory import make_task

pytestmark = pytest.mark.docker

PRESENT_IMAGE = 'docker_image = "tbflow/base:bookworm"\n'
BUILD_SEC = 10


@pytest.fixture(autouse=True)
def _own_history(tmp_path, monkeypatch):
    monkeypatch.setenv("TBFLOW_HISTORY", str(tmp_path / "trial-history.sqlite"))


def test_cold_image_builds_while_ready_trials_run(run_job, tmp_path, monkeypatch):
    import tasks_lib.trial.images as images

    monkeypatch.setattr(images, "extra_build_options", lambda: {"network_mode": "none"})  # tests run offline
    ds = tmp_path / "ds"
    marker = f"ahead-marker-{uuid.uuid4().hex[:12]}"  # a new build context: never an image of another session
    # The build takes BUILD_SEC whatever the machine's load, so "a ready trial starts while it runs"
    # does not depend on how fast a trial starts (a COPY-only build lost that race under CI load).
    # The RUN step echoes the marker: BuildKit's log shows no LABEL step.
    make_task(ds, "a-cold", dockerfile=(f"FROM tbflow/base:bookworm\nCOPY marker /marker\n"
                                        f"RUN echo {marker} && sleep {BUILD_SEC}\nLABEL tbflow.test={marker}\n"),
              env_files={"marker": marker},
              solve="touch /tmp/solved\n", check="grep -q ahead-marker /marker && [ -f /tmp/solved ]",
              extra_toml="\n[metadata]\nestimated_duration_sec = 100\n")
    make_task(ds, "b-warm", extra_toml=PRESENT_IMAGE + "\n[metadata]\nestimated_duration_sec = 10\n")
    make_task(ds, "c-warm", extra_toml=PRESENT_IMAGE + "\n[metadata]\nestimated_duration_sec = 5\n")
    result = run_job(ds, harnesses=["oracle", "nop"], concurrency=1)

    planned = [q["trial_id"] for q in
               json.loads((tmp_path / "jobs" / "job" / "job.json").read_text())["order"]["trials"]]
    assert planned[:2] == ["a-cold.oracle.1", "a-cold.nop.1"]  # longest expected first ...
    started = sorted(result.records, key=lambda r: r.started_at)
    assert started[0].spec.task_name == "b-warm"  # ... but a ready trial takes the slot meanwhile

    cold = [r for r in result.records if r.spec.task_name == "a-cold"]
    assert {(r.validity.status, r.validity.reward) for r in cold} == {("scored", 1.0), ("scored", 0.0)}
    assert sorted(r.image.source for r in cold) == ["built", "reused"]  # one build for both trials
    built = next(r for r in cold if r.image.source == "built")
    assert built.image.ahead and built.image.build_log == "build.log"
    assert marker in (tmp_path / "jobs" / "job" / "trials" / built.trial_id / "build.log").read_text()

    (lane_log,) = (tmp_path / "jobs" / "job" / ".builds").iterdir()  # the lane's log, last written at the end
    build_ended = datetime.fromtimestamp(lane_log.stat().st_mtime, timezone.utc)
    assert all(r.started_at >= build_ended for r in cold)  # neither trial waited for the build in a slot


def test_failed_ahead_build_is_invalid_environment_for_each_trial(run_job, tmp_path):
    ds = tmp_path / "ds"
    marker = f"ahead-fail-{uuid.uuid4().hex[:12]}"
    make_task(ds, "bad", dockerfile=f"FROM tbflow/base:bookworm\nCOPY {marker} /nowhere\n")  # no such file
    result = run_job(ds, harnesses=["oracle", "nop"], env_retries=1)
    assert len(result.records) == 2
    for r in result.records:
        assert (r.validity.status, r.validity.kind) == ("invalid", "environment")
        assert marker in r.validity.reason and r.validity.reason.endswith("(after 2 tries)")
        assert r.validity.evidence == "build.log"
        assert marker in (tmp_path / "jobs" / "job" / "trials" / r.trial_id / "build.log").read_text()
        assert len(r.env_retry_errors) == 1 and "docker build failed" in r.env_retry_errors[0]
