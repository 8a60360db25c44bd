"""A trial run again (here: its trial.json cannot be parsed) runs its agent and verifier again:
it never reuses cached stage results whose logs were deleted when its trial dir was emptied."""

import pytest

from task_factory import make_task, record_of


@pytest.mark.docker
def test_trial_with_unreadable_record_runs_agent_and_verifier_again(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "t", solve="cat /proc/sys/kernel/random/uuid | tee /app/marker\n",
              test_sh="#!/bin/bash\ncat /app/marker\necho 1 > /logs/verifier/reward.txt\n")
    first = record_of(run_job(ds, job_name="j"), "t")
    trial = tmp_path / "jobs" / "j" / "trials" / first.trial_id
    marker = (trial / first.agent.stdout_log).read_text().strip()
    assert marker and marker in (trial / first.verifier.stdout_log).read_text()
    (trial / "trial.json").write_text("{ damaged")

    again = record_of(run_job(ds, job_name="j"), "t")
    assert (again.validity.status, again.validity.reward) == ("scored", 1.0)
    for log in (again.agent.stdout_log, again.verifier.stdout_log):
        assert (trial / log).is_file(), f"{log} referenced by the record does not exist"
    new_marker = (trial / again.agent.stdout_log).read_text().strip()
    assert new_marker and new_marker != marker, "the agent stage was reused, not run again"
    assert new_marker in (trial / again.verifier.stdout_log).read_text()
