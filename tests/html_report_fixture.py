"""A small job for the report.html tests: a passing model trial with a (hostile) ATIF trajectory
and CTRF test cases, an invalid one (environment), and a failed reference trial with a flag."""

from __future__ import annotations

import json
from pathlib import Path

from atif_fixture import write_trajectory
from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.records.record_models import TrialFlag

CTRF = {"results": {"tool": {"name": "pytest"}, "summary": {"tests": 2, "passed": 1, "failed": 1},
                    "tests": [{"name": "test_file_exists", "status": "passed", "duration": 3},
                              {"name": "test_<b>content</b>", "status": "failed", "duration": 2,
                               "message": "assert 'hullo' == 'hello'"}]}}


def html_job(root: Path) -> tuple[Path, list]:
    trials = [make_trial("hello", "codex", 1, reward=1.0, model="openai/gpt-test"),
              make_trial("bye", "codex", 1, invalid="environment", model="openai/gpt-test"),
              make_trial("bye", "oracle", 1, reward=0.0)]
    # as the trial stage records it: the trajectory's total is the trial's cost (write_trajectory)
    trials[0].agent = trials[0].agent.model_copy(update={"cost_usd": 0.0038, "trajectory": "trajectory.json"})
    trials[2] = trials[2].model_copy(update={"flags": [
        TrialFlag(kind="tampering", message="reward.txt rewritten by <img src=x onerror=alert(1)>\x1b[2J",
                  evidence="verifier/tamper.log")]})
    job_dir = write_job_dir(root, make_job(trials, model="openai/gpt-test"), trials)
    write_trajectory(job_dir / "trials" / trials[0].trial_id, hostile=True)
    (job_dir / "trials" / trials[2].trial_id / "verifier" / "ctrf.json").write_text(json.dumps(CTRF))
    return job_dir, trials
