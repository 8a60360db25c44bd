"""A Dockerfile that fails makes its trial invalid: environment; its reason's first line is the
failing step and the engine's error (what every one-line view shows), the build's last lines
follow; the job goes on with the other tasks."""

import re

from task_factory import make_task, record_of


def test_failed_build_is_invalid_environment_and_job_goes_on(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "broken-build", dockerfile="FROM tbflow/base:bookworm\nRUN echo tbflow-build-marker && exit 3\n")
    make_task(ds, "fine")
    result = run_job(ds)
    broken = record_of(result, "broken-build")
    assert broken.validity.status == "invalid"
    assert broken.validity.kind == "environment"
    assert "tbflow-build-marker" in broken.validity.reason
    head = broken.validity.reason.splitlines()[0]
    assert re.match(r"build-image: docker build failed at Step 2/\d+ \(RUN echo tbflow-build-marker && exit 3\): ", head), head
    # the engine's error line: the legacy builder's wording, or BuildKit's
    assert re.search(r"(returned a non-zero code|did not complete successfully: exit code): 3$", head), head
    assert broken.validity.evidence == "build.log"
    assert broken.agent is None and broken.verifier is None
    log = (tmp_path / "jobs" / "job" / "trials" / broken.trial_id / "build.log").read_text()
    assert "tbflow-build-marker" in log
    fine = record_of(result, "fine")
    assert (fine.validity.status, fine.validity.reward) == ("scored", 1.0)
