"""``tbflow regrade`` as a user runs it: a finished job, then a new minor version of its tasks whose
tests changed, regraded from the command line. A separate-verifier trial is judged by the new
tests from its recorded artifacts (no agent runs: a marker the agent would write stays absent, its
logs come from the source); a shared-verifier trial and a task whose environment changed are
listed as not regradable, with why; the source job is left as it was."""

import json
import os
import shutil
import subprocess
from pathlib import Path

from task_factory import make_task, record_of
from tbflow_process import ROOT, TBFLOW

TOML = """\
schema_version = "1.4"
artifacts = ["/app/out.txt"]

[agent]
timeout_sec = 60

[verifier]
timeout_sec = 60
environment_mode = "{mode}"

[environment]
build_timeout_sec = 300
network_mode = "no-network"
"""
# the oracle records that it ran: a regrade must not run it again
SOLVE = "echo 42 > /app/out.txt; echo ran >> /logs/agent/ran.txt; date +%s%N > /tmp/agent-ran\n"


def _task(ds: Path, name: str, mode: str, check: str) -> Path:
    d = make_task(ds, name, solve=SOLVE, check=check)
    (d / "task.toml").write_text(TOML.format(mode=mode))
    return d


def _trial(job: Path, tid: str) -> dict:
    return json.loads((job / "trials" / tid / "trial.json").read_text())


def test_regrade_scores_recorded_artifacts_by_the_new_tests_and_lists_what_it_cannot(run_job, tmp_path):
    v1, v2 = tmp_path / "v1", tmp_path / "v2"
    _task(v1, "a-separate", "separate", '[ "$(cat /app/out.txt)" = 42 ]')
    _task(v1, "b-shared", "shared", '[ "$(cat /app/out.txt)" = 42 ]')
    _task(v1, "c-env-changes", "separate", '[ "$(cat /app/out.txt)" = 42 ]')
    source = run_job(v1, harnesses=["oracle"])
    assert [record_of(source, t).validity.reward for t in ("a-separate", "b-shared", "c-env-changes")] == [1.0] * 3
    shutil.copytree(v1, v2)  # the next minor version: new tests; one task's environment changed too
    for name in ("a-separate", "b-shared", "c-env-changes"):  # only v2's tests have the marker
        (v2 / name / "tests" / "v2").write_text("v2\n")
        (v2 / name / "tests" / "test.sh").write_text(
            "#!/bin/bash\nif [ \"$(cat /app/out.txt)\" = 42 ] && [ -f /tests/v2 ] && [ ! -e /tmp/agent-ran ]; then "
            "echo 1; else echo 0; fi > /logs/verifier/reward.txt\n")
    (v2 / "c-env-changes" / "environment" / "Dockerfile").write_text("FROM tbflow/base:bookworm\nWORKDIR /srv\n")
    src_job = Path(source.job_dir)
    before = (src_job / "trials" / "a-separate.oracle.1" / "trial.json").read_text()

    done = subprocess.run([*TBFLOW, "regrade", str(src_job), str(v2), "--job-name", "regraded"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL,
                          env={**os.environ, "COLUMNS": "200"})
    assert done.returncode == 0, done.stdout + done.stderr
    job = src_job.parent / "regraded"
    regraded = _trial(job, "a-separate.oracle.1")
    assert regraded["validity"]["status"] == "scored" and regraded["validity"]["reward"] == 1.0, regraded["validity"]
    assert regraded["verifier"]["environment"] == "separate"
    assert regraded["regraded_from"]["validity"]["reward"] == 1.0  # the verdict then, kept beside the new one
    page = next((job / "report-trials").glob("a-separate*.html")).read_text()
    assert 'id="regraded"' in page and "with reward 1" in page
    diff = subprocess.run([*TBFLOW, "diff", str(src_job), str(job)], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert diff.returncode == 0 and "a-separate" in diff.stdout, diff.stdout + diff.stderr
    assert (job / "trials" / "a-separate.oracle.1" / "agent" / "ran.txt").read_text() == "ran\n"  # copied, not re-run
    assert not (job / "trials" / "b-shared.oracle.1").exists() and not (job / "trials" / "c-env-changes.oracle.1").exists()
    problems = {p["name"]: p["message"] for p in json.loads((job / "job.json").read_text())["task_problems"]}
    assert "verifier is not separate" in problems["b-shared.oracle.1"]
    assert "environment/Dockerfile" in problems["c-env-changes.oracle.1"] and "rerun" in problems["c-env-changes.oracle.1"]
    assert (src_job / "trials" / "a-separate.oracle.1" / "trial.json").read_text() == before


def test_regrade_of_a_directory_that_is_no_job_names_it(tmp_path):
    done = subprocess.run([*TBFLOW, "regrade", str(tmp_path)], cwd=ROOT, capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 2 and "SOURCE_JOB" in done.stderr and str(tmp_path) in done.stderr, done.stderr
