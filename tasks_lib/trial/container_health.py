"""Did the agent break its own container, or did the environment fail? Decided from Docker's evidence.

An agent runs as root in a container it may wreck. What it breaks there is its own result
(scored 0, flagged ``broke-container``), never an invalid trial; what breaks from outside is an
environment failure. The evidence (docs/judge.md):

* **the container stopped** (the agent killed PID 1 or the main process): Docker's ``State``
  plus the engine's events since the container started. A ``die`` with no ``kill``/``stop``/
  ``pause`` request through the API came from inside → the agent's. An API kill, a history that
  no longer reaches back to the container's ``start`` (the engine keeps a bounded event log), or
  a container that is gone → environment. A main process OOM-killed (``State.OOMKilled`` and exit
  137) counts as the agent's only when the task set a memory limit (then the limit is part of the
  task); ``OOMKilled`` alone only says some process was, so a main process that died otherwise is
  judged by the rule above.

What test.sh's end says (no reward, a hang) is decided in ``verdict_table``; the evidence files
of those verdicts are written here.
"""

from __future__ import annotations

import json
import time
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from docker.errors import NotFound

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.container.engine_events import ENGINE_EVENTS
from tasks_lib.errors import EnvironmentFailure
from tasks_lib.records.record_models import TrialFlag
from tasks_lib.text_clean import escaped_name
from tasks_lib.judge.runner_use import EVIDENCE as RUNNER_EVIDENCE

if TYPE_CHECKING:
    from tasks_lib.judge.verdict_table import VerifierEvidence

STATE_EVIDENCE = "container-state.txt"
BROKEN_EVIDENCE = "verifier/broken-container.txt"
OUTSIDE_ACTIONS = ("kill", "stop", "pause", "restart")
#: how long a container that reads as running is read again after one of tbflow's execs failed in it:
#: its PID 1 can be dead (the exec failed for that) while the engine still shows it running, for
#: the moment it takes to note the exit; an exec's end seen from the engine's event came first once
#: (an OOM-killed container's verifier read as "the judge was killed", not as the OOM it was)
SETTLE_SEC = 2.0
SETTLE_STEP_SEC = 0.05


class MissingInterpreter(EnvironmentFailure):
    """The image has no ``bash`` to run ``tests/test.sh`` with; a new try would not have one either."""

    retryable = False


def stopped_container_flag(container: str, trial_dir: Path, memory_mb: int | None) -> TrialFlag | None:
    """A flag when the trial's container stopped by the agent's doing; None when it runs, is gone,
    or its stop cannot be put on the agent (the caller keeps its environment failure)."""
    try:
        info = _settled(container)
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
    actions = [str(e.get("Action", "")).split(":")[0] for e in events]
    message = stopped_by_agent(state, actions, memory_mb)
    return TrialFlag(kind="broke-container", evidence=STATE_EVIDENCE, message=message) if message else None


def stopped_by_agent(state: dict, actions: list[str], memory_mb: int | None) -> str | None:
    """Whose doing a stopped container is (pure): the flag's message when the agent's, None when
    the evidence points outside the container or does not reach back to its start."""
    if state.get("Running") or "start" not in actions or any(a in OUTSIDE_ACTIONS for a in actions):
        return None
    code, ooms = state.get("ExitCode"), actions.count("oom")
    if state.get("OOMKilled") and code == 137:  # the main process itself was OOM-killed
        if not memory_mb:
            return None  # no limit of the task's: the host ran out of memory
        return f"the container was OOM-killed at the task's memory limit ({memory_mb} MB)"
    if "die" not in actions:
        return None
    oom_note = f"; {ooms or 'some'} of its processes had been OOM-killed before" if state.get("OOMKilled") else ""
    return (f"the container's main process was stopped from inside (exit code {code}, no kill through the "
            f"Docker API): the agent stopped its own container, e.g. killed PID 1{oom_note}")


def container_running(container: str) -> bool:
    """Whether the container still runs (False when it stopped or is gone), asked after one of
    tbflow's execs failed in it: a running one is read again for up to ``SETTLE_SEC``."""
    try:
        return bool(_settled(container).get("State", {}).get("Running"))
    except DOCKER_ERRORS:
        return False


def _settled(container: str) -> dict:
    """The container's inspect; one that reads as running is read again every ``SETTLE_STEP_SEC``
    until it stops or ``SETTLE_SEC`` passed. Only failure paths ask, so a container that does run
    costs those 2 s only to a trial whose verifier or kill already failed."""
    api = get_client().api
    until = time.monotonic() + SETTLE_SEC
    info = api.inspect_container(container)
    while info.get("State", {}).get("Running") and time.monotonic() < until:
        time.sleep(SETTLE_STEP_SEC)
        info = api.inspect_container(container)
    return info


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


def writable_layer_bytes(container: str) -> int | None:
    """The container's writable layer size as the engine counts it (slow: the engine walks it),
    only where the layer cannot be read from the host."""
    try:
        found = get_client().api.containers(all=True, size=True, filters={"name": container})
    except DOCKER_ERRORS:
        return None
    return next((c.get("SizeRw") for c in found), None)


def write_broke_evidence(row: str, ev: "VerifierEvidence", trial_dir: Path) -> str | None:
    """The evidence file of a verdict that scores the agent 0 (``verdict_table`` rows)."""
    r = ev.report
    if row == "system-files-deleted":
        lines = ["files the container deleted under the system's bin/lib dirs (its writable layer):",
                 *ev.runner.deleted_system]
    elif row.startswith("disk-full"):
        lines = ["file systems as the kernel reported them to tbflow's judge after test.sh (statfs):",
                 *(f"{d.path}: {d.fstype}, {d.total_kb} KiB, {d.avail_kb} KiB free" for d in r.disks)]
    elif row == "planted-runner-no-reward":
        return RUNNER_EVIDENCE
    elif row == "test-sh-killed-no-reward":
        lines = ["how test.sh ended, as tbflow's judge saw it:", f"signal {r.signal} (not sent by the judge: "
                 f"{'timed out' if r.timed_out else 'before the timeout'}), OOM kills counted: {r.oom_kills}",
                 f"processes the agent left running next to it: {len(r.ran_next_to)}",
                 *(f"  {p.pid} {p.command[:200]}" for p in r.ran_next_to[:20])]
    elif row == "verifier-blocked":
        lines = ["why test.sh hung or wrote no reward, from tbflow's judge and the container's writable layer:",
                 *ev.blockers, "", "test.sh's processes at the timeout (pid state wchan exe fifos):",
                 *(f"  {s.pid} {s.state} {s.wchan} {s.exe} {' '.join(s.fifo_paths)}" for s in r.stuck)]
    else:
        return None
    _write(trial_dir, lines)
    return BROKEN_EVIDENCE


def _write(trial_dir: Path, lines: list[str]) -> None:
    """Each line escaped: they name the agent's files, FIFOs and programs (any bytes)."""
    path = trial_dir / BROKEN_EVIDENCE
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(escaped_name(ln) for ln in lines) + "\n", encoding="utf-8")
