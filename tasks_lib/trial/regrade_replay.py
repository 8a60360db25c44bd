"""A regrade trial's agent phase and artifacts: the source trial's record, copied, never re-run.

The six stages of a regrade trial are the usual ones so its record, reports and the Prefect UI read
alike; only two of them take their input from the source trial (``TrialSpec.regrade_source``):
run-agent starts the container and, instead of the harness, copies the source's agent logs and
model exchange (the trajectory is rebuilt from it) and its recorded ``AgentOutcome``; run-verifier
puts the source's collected artifacts (not the container's) into the separate verifier's fresh
container. The source job is only read.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tasks_lib.gateway.exchange.exchange_model import EXCHANGE_FILE
from tasks_lib.records.artifact_record import ArtifactEntry
from tasks_lib.records.record_models import RegradeOrigin, TrialRecord
from tasks_lib.trial.agent_stage import AgentStageResult
from tasks_lib.trial.artifact_collect import ARTIFACTS_DIR
from tasks_lib.trial.artifact_plan import MANIFEST

TRIAL_RECORD = "trial.json"
#: what of the source trial's directory is the agent phase's record
AGENT_FILES = ("agent", "host-agent", EXCHANGE_FILE)
#: flags the agent phase raises (the verifier's are raised again by the regrade's own verifier)
AGENT_FLAGS = ("harness-raised",)


def source_record(source_dir: Path) -> TrialRecord | None:
    path = source_dir / TRIAL_RECORD
    return TrialRecord.model_validate_json(path.read_text(encoding="utf-8")) if path.is_file() else None


def regrade_origin(source_dir: Path) -> RegradeOrigin | None:
    """The source trial and its verdict then, for the regrade's record."""
    record = source_record(source_dir)
    return RegradeOrigin(trial_dir=str(source_dir), validity=record.validity) if record is not None else None


def source_manifest(source_dir: Path) -> list[ArtifactEntry] | None:
    path = source_dir / ARTIFACTS_DIR / MANIFEST
    if not path.is_file():
        return None
    return [ArtifactEntry.model_validate(row) for row in json.loads(path.read_text(encoding="utf-8"))]


def replay_agent(source_dir: Path, trial_dir: Path) -> AgentStageResult:
    """The source trial's agent phase as this trial's: its logs and exchange copied, its outcome."""
    record = source_record(source_dir)
    if record is None or record.agent is None:  # checked when the job was planned; the source changed since
        raise FileNotFoundError(f"{source_dir / TRIAL_RECORD}: no agent phase recorded to regrade")
    for name in AGENT_FILES:
        _copy(source_dir / name, trial_dir / name)
    return AgentStageResult(outcome=record.agent, flags=[f for f in record.flags if f.kind in AGENT_FLAGS])


def replay_artifacts(source_dir: Path, trial_dir: Path) -> list[ArtifactEntry]:
    """The source trial's collected artifacts and manifest, copied into this trial's ``artifacts/``."""
    rows = source_manifest(source_dir)
    if rows is None:
        raise FileNotFoundError(f"{source_dir / ARTIFACTS_DIR / MANIFEST}: no artifacts recorded to regrade")
    _copy(source_dir / ARTIFACTS_DIR, trial_dir / ARTIFACTS_DIR)
    return rows


def _copy(src: Path, dst: Path) -> None:
    """Files and directories as they are; links copied as links (never followed out of the source)."""
    if src.is_symlink() or not src.exists():
        return
    if src.is_dir():
        shutil.copytree(src, dst, symlinks=True, dirs_exist_ok=True)
    else:
        shutil.copy2(src, dst)
