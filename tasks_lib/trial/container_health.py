"""Did the agent break its own container, or did the environment fail? Decided from Docker's evidence.

An agent runs as root in a container it may wreck. What it breaks there is its own result
(scored 0, flagged ``broke-container``), never an invalid trial; what breaks from outside is an
environment failure. The evidence (README "The judge"):

* **the container stopped** (the agent killed PID 1 or the main process): Docker's ``State``
  plus the engine's events since the container started. A ``die`` with no ``kill``/``stop``/
  ``pause`` request through the API came from inside → the agent's. An API kill, a history that
  no longer reaches back to the container's ``start`` (the engine keeps a bounded event log), or
  a container that is gone → environment. ``State.OOMKilled`` counts as the agent's only when the
  task set a memory limit (then the limit is part of the task).
* **test.sh could not run or wrote no reward**, and ``docker diff`` shows the container deleted
  files under the system's bin/lib dirs (``rm /usr/bin/bash``, ``python3``) → the agent's. ``bash``
  missing although nothing was deleted → the image lacks it: environment (not retried).
* **a full disk** when test.sh wrote no reward (``statfs`` by tbflow's judge: the kernel's numbers): a file system private to
  the container (tmpfs) → the agent's; the host's disk (overlay) → the agent's only when the
  container's own writable layer holds at least half of it, else environment.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path

from docker.errors import NotFound

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.container.engine_events import ENGINE_EVENTS
from tasks_lib.errors import ContainerError, EnvironmentFailure
from tasks_lib.records.record_models import TrialFlag
from tasks_lib.trial.judge_report import JudgeReport
from tasks_lib.trial.toolchain_diff import SYSTEM_DIRS, ContainerDiff

STATE_EVIDENCE = "container-state.txt"
BROKEN_EVIDENCE = "verifier/broken-container.txt"
OUTSIDE_ACTIONS = ("kill", "stop", "pause", "restart")


class MissingInterpreter(EnvironmentFailure):
    """The image has no ``bash`` to run ``tests/test.sh`` with; a new try would not have one either."""

    retryable = False


def stopped_container_flag(container: str, trial_dir: Path, memory_mb: int | None) -> TrialFlag | None:
    """A flag when the trial's container stopped by the agent's doing; None when it runs, is gone,
    or its stop cannot be put on the agent (the caller keeps its environment failure)."""
    api = get_client().api
    try:
        info = api.inspect_container(container)
    except (NotFound, *DOCKER_ERRORS):  # also an engine that does not answer (restarting)
        return None
    state = info.get("State", {})
    if state.get("Running"):
        return None
    events = ENGINE_EVENTS.seen(info["Id"])  # tbflow's own record first: the engine keeps only 256 events
    if events is None:
        events = _events_since_start(info["Id"], state.get("StartedAt", ""))
    lines = ["Docker State:", json.dumps(state, indent=2), "", "engine events since the container started:"]
    lines += [f"  {e.get('Action')} {json.dumps(e.get('Actor', {}).get('Attributes', {}), sort_keys=True)}"
              for e in events]
    (trial_dir / STATE_EVIDENCE).write_text("\n".join(lines) + "\n", encoding="utf-8")
    actions = [e.get("Action", "") for e in events]
    if "start" not in actions or any(a in OUTSIDE_ACTIONS for a in actions):
        return None
    if state.get("OOMKilled"):
        if not memory_mb:
            return None
        return TrialFlag(kind="broke-container", evidence=STATE_EVIDENCE,
                         message=f"the container was OOM-killed at the task's memory limit ({memory_mb} MB)")
    if "die" not in actions:
        return None
    return TrialFlag(kind="broke-container", evidence=STATE_EVIDENCE,
                     message=f"the container's main process was stopped from inside (exit code "
                             f"{state.get('ExitCode')}, no kill through the Docker API): the agent stopped "
                             "its own container, e.g. killed PID 1")


def container_running(container: str) -> bool:
    """Whether the container still runs (False when it stopped or is gone)."""
    try:
        return bool(get_client().api.inspect_container(container).get("State", {}).get("Running"))
    except DOCKER_ERRORS:
        return False


def _events_since_start(container_id: str, started_at: str) -> list[dict]:
    try:
        since = int(datetime.fromisoformat(started_at[:19] + "+00:00").timestamp()) - 1  # StartedAt is UTC
    except ValueError:
        return []
    try:
        return list(get_client().api.events(since=since, until=int(time.time()) + 1, decode=True,
                                            filters={"container": container_id, "type": "container"}))
    except DOCKER_ERRORS:
        return []


def verifier_breakage(container: str, r: JudgeReport, diff: ContainerDiff, trial_dir: Path) -> TrialFlag | None:
    """When test.sh gave no reward: a flag if the agent broke what it needs, None if nothing points
    at the agent. Raises an ``EnvironmentFailure`` when the evidence points at the environment."""
    removed = diff.deleted_under(SYSTEM_DIRS)
    if r.no_bash and not any(p.rsplit("/", 1)[-1] == "bash" for p in removed):
        raise MissingInterpreter("run-verifier", "the image has no bash, which is needed to run tests/test.sh")
    if removed:
        shown = ", ".join(removed[:8]) + (f" and {len(removed) - 8} more" if len(removed) > 8 else "")
        _write(trial_dir, ["docker diff: files the container deleted under the system's bin/lib dirs:", *removed])
        how = "test.sh could not run" if r.no_bash else "test.sh wrote no reward"
        return TrialFlag(kind="broke-container", evidence=BROKEN_EVIDENCE,
                         message=f"the agent deleted {shown}; {how}")
    full = [d for d in r.disks if d.full]
    if not full:
        return None
    disk = full[0]
    _write(trial_dir, ["file systems as the kernel reported them to tbflow's judge after test.sh (statfs):",
                       *(f"{d.path}: {d.fstype}, {d.total_kb} KiB, {d.avail_kb} KiB free" for d in r.disks)])
    if disk.fstype != "overlay":
        return TrialFlag(kind="broke-container", evidence=BROKEN_EVIDENCE,
                         message=f"the agent filled {disk.path} ({disk.fstype}); test.sh wrote no reward")
    written = _writable_layer_bytes(container)
    if written is not None and written >= disk.total_kb * 1024 // 2:
        return TrialFlag(kind="broke-container", evidence=BROKEN_EVIDENCE,
                         message=f"the agent filled the disk ({written // 2**20} MB written in its container); "
                                 "test.sh wrote no reward")
    raise ContainerError("run-verifier", f"the host's disk is full ({disk.path}) and the container wrote only "
                         f"{(written or 0) // 2**20} MB of it; test.sh wrote no reward", BROKEN_EVIDENCE)


def _writable_layer_bytes(container: str) -> int | None:
    try:
        found = get_client().api.containers(all=True, size=True, filters={"name": container})
    except DOCKER_ERRORS:
        return None
    return next((c.get("SizeRw") for c in found), None)


def _write(trial_dir: Path, lines: list[str]) -> None:
    path = trial_dir / BROKEN_EVIDENCE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
