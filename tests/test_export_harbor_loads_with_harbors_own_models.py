"""The Harbor export read by Harbor itself (scripts/harbor-check.sh: Harbor 0.26's models and its
viewer's job scanner, in a Python 3.12 venv of its own). The failure pinned: an export our mirror
models accept but Harbor refuses, lists wrongly, or scores an invalid trial as 0."""

from __future__ import annotations

from pathlib import Path

from harbor_check import harbor_check
from html_report_fixture import html_job

from tasks_lib.publish.harbor_export import export_harbor

REPO = Path(__file__).resolve().parents[1]



def test_harbor_lists_the_job_and_keeps_the_invalid_trial_out_of_rewards(tmp_path):
    job_dir, trials = html_job(tmp_path / "jobs")
    (tmp_path / "out").mkdir()
    summary = export_harbor(job_dir, tmp_path / "out")
    assert summary.trials == 3
    seen = harbor_check(tmp_path / "out")
    job = seen["jobs"][job_dir.name]
    assert job["scanner_sees_config"] and job["n_total_trials"] == 3 and job["n_errored_trials"] == 1
    passed, invalid, flagged = (job["trials"][t.trial_id] for t in trials)
    assert passed["rewards"] == {"reward": 1.0} and passed["reward_valid"] is True
    assert passed["agent"] == "codex" and passed["task_name"] == "hello"
    assert passed["trajectory_steps"] == 3, "agent/trajectory.json must load with Harbor's Trajectory"
    assert invalid["rewards"] is None and invalid["reward_valid"] is False
    assert invalid["exception_type"] == "TbflowInvalidEnvironment"
    assert "docker build failed" in invalid["exception_message"]
    assert flagged["rewards"] == {"reward": 0.0} and flagged["trajectory_steps"] is None
    assert [f["kind"] for f in flagged["metadata"]["tbflow"]["flags"]] == ["tampering"]
    listed = seen["viewer"][job_dir.name]  # what `harbor view` lists and serves
    assert listed[trials[0].trial_id] == {"reward": 1.0, "error_type": None, "trajectory": True}
    assert listed[trials[1].trial_id] == {"reward": None, "error_type": "TbflowInvalidEnvironment",
                                          "trajectory": False}
    assert listed[trials[2].trial_id]["reward"] == 0.0
