"""Helpers for tests that run ``tbflow`` as users do (a new process) and stop or kill it.

Every signal goes only to processes the test started (by pid or process group id); containers
are found by the job directory label, so other jobs on the machine are never touched.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

from tasks_lib.container.docker_client import LABEL_JOB_DIR, LABEL_TRIAL

ROOT = Path(__file__).resolve().parents[1]
TBFLOW = [sys.executable, "-m", "flows.cli.main"]


def _ppid(pid: int) -> int | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat[stat.rindex(")") + 2:].split()[1])


def cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def descendants(pid: int) -> list[int]:
    """Every live process below ``pid`` (children, grandchildren, ...)."""
    parents: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            pp = _ppid(int(entry))
            if pp is not None:
                parents.setdefault(pp, []).append(int(entry))
    out, todo = [], [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            out.append(child)
            todo.append(child)
    return out


def alive(pid: int) -> bool:
    """True while ``pid`` exists and is not a zombie."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rindex(")") + 2] != "Z"


def wait_until(cond, timeout: float, what: str, poll: float = 0.1) -> None:
    deadline = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < deadline, f"timed out after {timeout:.0f} s waiting for {what}"
        time.sleep(poll)


def trial_containers(client, under: Path, trial_id: str) -> list:
    """Running containers of trial ``trial_id`` whose job is under ``under`` (a test's tmp_path).

    A trial id like ``slow.oracle.1`` recurs across tests and test sessions: filtering by it alone
    finds (and then execs in, or kills) another session's container running at the same time.
    """
    root = os.path.realpath(under) + os.sep
    found = client.containers.list(filters={"label": f"{LABEL_TRIAL}={trial_id}"}, ignore_removed=True)
    return [c for c in found if (c.labels.get(LABEL_JOB_DIR) or "").startswith(root)]


def job_containers(client, job_dir: Path) -> list[str]:
    """Names of the containers (running or not) of the job in ``job_dir``.

    Through the low-level API (one list call, no per-container inspect), so a container removed
    while we look is simply not listed instead of raising ``NotFound``.
    """
    found = client.api.containers(all=True, filters={"label": f"{LABEL_JOB_DIR}={job_dir.resolve()}"})
    return [c["Names"][0].lstrip("/") for c in found]


def running_job_containers(client, job_dir: Path) -> list[str]:
    found = client.api.containers(filters={"label": f"{LABEL_JOB_DIR}={job_dir.resolve()}",
                                           "status": "running"})
    return [c["Names"][0].lstrip("/") for c in found]


def server_processes(tbflow_pid: int) -> list[int]:
    """The local server process(es) tbflow started (its Prefect server, or the guard of a configured one)."""
    return [p for p in descendants(tbflow_pid) if "flows.local_server.server_main" in cmdline(p)]
