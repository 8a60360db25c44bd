"""Containers left by crashed runs (orphans), and ``tbflow gc`` that removes them machine-wide.

A trial container is an orphan when no live process owns its job: the job dir's lock (see
``job_lock``) is missing or stale. A job's orphans are removed whenever tbflow next touches the
job (``run``, ``resume``, ``report``); ``collect_garbage`` does it for every job whose containers
are on this engine. Both take the job's lock first, so a run starting at the same moment is
refused instead of losing its containers, and neither ever removes a container of a job whose
lock a live process holds. Containers are found by their labels only (``tbflow.trial``,
``tbflow.job_dir`` = the absolute job dir, ``tbflow.job`` = the job id).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from pathlib import Path

from pydantic import BaseModel, Field

from tasks_lib.container.docker_client import LABEL_JOB, LABEL_JOB_DIR, LABEL_TRIAL, get_client
from tasks_lib.store.job_lock import JobLock, JobLockedError, describe_holder, lock_state
from tasks_lib.container.container_removal import remove_container, remove_listed

_log = logging.getLogger(__name__)


def list_containers(label: str) -> list[dict]:
    """Containers (``Id``, ``Names``, ``Labels``) with ``label`` (``key`` or ``key=value``).

    One list call and no inspect per container: ``containers.list()`` of the SDK inspects each
    one and fails with NotFound when any of them is removed meanwhile (by its own run, say).
    """
    return get_client().api.containers(all=True, filters={"label": label})


def _name(c: dict) -> str:
    return (c.get("Names") or [c["Id"][:12]])[0].lstrip("/")


def _job_containers(job_dir: Path, job_id: str | None) -> list[dict]:
    found = {c["Id"]: c for c in list_containers(f"{LABEL_JOB_DIR}={os.path.realpath(job_dir)}")}
    if job_id:  # containers of tbflow versions that did not label the job dir yet
        found.update({c["Id"]: c for c in list_containers(f"{LABEL_JOB}={job_id}")})
    return list(found.values())


def remove_orphans(job_dir: Path, job_id: str | None = None) -> int:
    """Remove the containers of ``job_dir``'s earlier, dead runs; return how many.

    Does nothing when another live process holds the job's lock. Called by a run that holds the
    lock itself (the lock is re-entrant), it removes what earlier runs of the job left.
    """
    try:
        lock = JobLock.acquire(job_dir)
    except JobLockedError:
        return 0
    try:
        return remove_listed(_job_containers(job_dir, job_id))
    finally:
        lock.release()


def remove_orphans_quietly(job_dir: Path, job_id: str | None) -> int:
    """``remove_orphans`` for read-only commands: no engine, no harm (returns 0)."""
    try:
        return remove_orphans(job_dir, job_id)
    except Exception as exc:  # noqa: BLE001 - a report must not fail because Docker is away
        _log.debug("orphan check of %s skipped: %s", job_dir, exc)
        return 0


class GcReport(BaseModel):
    removed: dict[str, list[str]] = Field(default_factory=dict, description="job dir -> container names")
    live: dict[str, str] = Field(default_factory=dict, description="job dir -> who holds it")
    left_alone: dict[str, str] = Field(default_factory=dict, description="job dir -> why")


def collect_garbage(under: Path | None = None, dry_run: bool = False) -> GcReport:
    """Remove the orphans of every job on this engine (only job dirs below ``under``, if given)."""
    report = GcReport()
    by_dir: dict[str, list] = defaultdict(list)
    for c in list_containers(LABEL_TRIAL):
        by_dir[(c.get("Labels") or {}).get(LABEL_JOB_DIR, "")].append(c)
    root = os.path.realpath(under) + os.sep if under is not None else None
    for job_dir, containers in sorted(by_dir.items()):
        names = sorted(_name(c) for c in containers)
        if root is not None and not (job_dir + os.sep).startswith(root):
            continue
        if not job_dir:
            report.left_alone["(no tbflow.job_dir label)"] = f"{len(names)} container(s) of an older tbflow: " \
                                                             + ", ".join(names)
            continue
        if not Path(job_dir).is_dir():
            report.left_alone[job_dir] = "the job dir is not here, so its owner cannot be checked: " + ", ".join(names)
            continue
        state = lock_state(Path(job_dir))
        if state is not None and state[2]:
            report.live[job_dir] = describe_holder(state[0], state[1])
            continue
        if dry_run:
            report.removed[job_dir] = names
            continue
        try:
            with JobLock.acquire(Path(job_dir)):
                for c in containers:
                    remove_container(c["Id"])
        except JobLockedError as exc:  # a run started between the look and the lock
            report.live[job_dir] = exc.message
            continue
        report.removed[job_dir] = names
    return report
