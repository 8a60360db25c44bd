"""Whether a recorded trial can be regraded by a task's current verifier (pure: no Docker, no files).

Terminal-Bench versions benchmarks as major = rerun, minor = regrade (only the verifier changed),
patch = reuse. A regrade judges the recorded agent phase again without running the agent, so it is
honest only where the verifier's whole input was recorded: the task asks for a separate verifier
(its verifier sees nothing of the agent but the artifacts), the source trial's agent phase ended
and its artifacts were collected, every artifact the task now declares was collected then (as
Harbor's regrade requires: a path never collected cannot be put back), and what the agent worked
in is unchanged (``environment/`` and ``instruction.md``; a change there is a new major version:
rerun). ``tests/`` and ``task.toml`` may change: that is what a regrade is for.
"""

from __future__ import annotations

from tasks_lib.records.artifact_record import ArtifactEntry
from tasks_lib.records.record_models import TrialRecord
from tasks_lib.task.task_model import Task
from tasks_lib.trial.artifact_plan import CONVENTION_DIR

#: files of the task whose change means the agent would face another task: rerun, not regrade
AGENT_SIDE = ("environment/", "instruction.md")


def agent_side(files: dict[str, str]) -> dict[str, str]:
    """The task's files (path → hash) the agent phase depends on."""
    return {k: v for k, v in files.items() if k.startswith(AGENT_SIDE)}


def why_not_regradable(task: Task, source: TrialRecord | None, manifest: list[ArtifactEntry] | None,
                       source_files: dict[str, str] | None, task_files: dict[str, str]) -> str | None:
    """None when the trial can be regraded, else why not (shown for the trial, never run)."""
    if not task.separate_verifier:
        return ("the task's verifier is not separate ([verifier] environment_mode = \"separate\"): it judged the "
                "agent's container, which was not kept")
    if source is None:
        return "the source job has no record of this trial"
    if source.agent is None:
        return f"the source trial's agent phase did not end ({source.validity.status}: {source.validity.reason})"
    if manifest is None:
        return "the source trial collected no artifacts (no artifacts/manifest.json)"
    if source_files is None:
        return "the source job did not record its tasks' files"
    if agent_side(source_files) != agent_side(task_files):
        changed = sorted(set(agent_side(source_files).items()) ^ set(agent_side(task_files).items()))
        return (f"what the agent worked in changed ({', '.join(sorted({k for k, _ in changed})[:3])}): a new "
                "major version is a rerun, not a regrade")
    collected = {e.source.rstrip("/") for e in manifest}
    missing = [a.source for a in task.config.artifacts if a.source.rstrip("/") not in collected
               and a.source.rstrip("/") != CONVENTION_DIR]
    if missing:
        return f"the task now declares artifacts the source trial did not collect: {', '.join(missing[:3])}"
    return None
