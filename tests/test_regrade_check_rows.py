"""Pure: each reason a recorded trial cannot be regraded (``regrade_check``), one row at a time, and
the case that can: a separate verifier, an ended agent phase, collected artifacts covering what
the task declares now, and an unchanged environment and instruction."""

from datetime import datetime, timezone

import pytest

from task_factory import make_task
from tasks_lib.records.artifact_record import ArtifactEntry
from tasks_lib.records.record_models import AgentOutcome, TrialRecord, TrialSpec, Validity
from tasks_lib.task.task_loader import load_task
from tasks_lib.trial.regrade_check import why_not_regradable

NOW = datetime.now(timezone.utc)
FILES = {"environment/Dockerfile": "a", "instruction.md": "b", "tests/test.sh": "c", "task.toml": "d"}
ROWS = [ArtifactEntry(source="/logs/artifacts", destination="logs/artifacts", type="directory", status="ok"),
        ArtifactEntry(source="/app/out", destination="app/out", type="file", status="failed")]


def _record(agent: bool = True) -> TrialRecord:
    spec = TrialSpec(job_id="j", trial_id="t.oracle.1", task_name="t", task_path="/t", harness="oracle", attempt=1)
    return TrialRecord(spec=spec, harness_kind="reference", harness_version="1", started_at=NOW, ended_at=NOW,
                       duration_sec=1.0, validity=Validity(status="scored", reward=1.0) if agent else
                       Validity(status="invalid", kind="environment", reason="build failed"),
                       agent=AgentOutcome(timeout_sec=60, duration_sec=1.0) if agent else None)


def _task(tmp_path, mode: str = "separate", artifacts: str = '["/app/out"]'):
    d = make_task(tmp_path, f"t-{mode}")
    (d / "task.toml").write_text(f'version = "1.0"\nartifacts = {artifacts}\n[verifier]\nenvironment_mode = "{mode}"\n')
    return load_task(d)


def test_a_fully_recorded_trial_with_only_new_tests_is_regradable(tmp_path):
    changed_tests = {**FILES, "tests/test.sh": "new", "task.toml": "new"}
    assert why_not_regradable(_task(tmp_path), _record(), ROWS, FILES, changed_tests) is None


@pytest.mark.parametrize("case, phrase", [
    ("shared", "verifier is not separate"),
    ("no-record", "no record"),
    ("agent-never-ended", "did not end (invalid: build failed)"),
    ("no-manifest", "no artifacts/manifest.json"),
    ("no-task-files", "did not record its tasks' files"),
    ("environment-changed", "environment/Dockerfile"),
    ("instruction-changed", "instruction.md"),
    ("new-artifact", "did not collect: /app/new"),
])
def test_each_reason_a_trial_cannot_be_regraded(tmp_path, case, phrase):
    task = _task(tmp_path, "shared") if case == "shared" else _task(
        tmp_path, artifacts='["/app/out", "/app/new"]' if case == "new-artifact" else '["/app/out"]')
    record = None if case == "no-record" else _record(agent=case != "agent-never-ended")
    rows = None if case == "no-manifest" else ROWS
    source_files = None if case == "no-task-files" else FILES
    now_files = {**FILES, "environment/Dockerfile": "z"} if case == "environment-changed" else (
        {**FILES, "instruction.md": "z"} if case == "instruction-changed" else FILES)
    why = why_not_regradable(task, record, rows, source_files, now_files)
    assert why is not None and phrase in why, why


def _identity(tests: str, dockerfile: str = "a"):
    from tasks_lib.records.job_identity import JobIdentity
    return JobIdentity(config={}, harnesses={}, tasks={"t": {**FILES, "tests/test.sh": tests,
                                                             "environment/Dockerfile": dockerfile}})


def test_a_job_whose_only_change_is_its_tests_is_named_a_regrade_not_a_rerun():
    from tasks_lib.records.job_identity import verifier_side_only
    assert verifier_side_only(_identity("c"), _identity("new"))
    assert not verifier_side_only(_identity("c"), _identity("new", dockerfile="z"))
    assert not verifier_side_only(_identity("c"), _identity("c"))  # nothing changed: nothing to regrade
