"""Removing trial containers (and what belongs to them) by name or by tbflow's labels.

A trial is its container, with a *filler* container on a remote engine (it owns the judge's
volumes, so it goes after the trial container) or a bind-mounted tests dir on this host
(``judge_mounts``). Removals never raise on "already gone"; the job-level cleanup logs a failure
and leaves the labelled leftover for the next command that touches the job.
"""

from __future__ import annotations

import logging
import re

from docker.errors import NotFound

from tasks_lib.container.docker_client import DOCKER_ERRORS, LABEL_JOB, get_client
from tasks_lib.container.judge.judge_mounts import remove_host_tests
from tasks_lib.errors import ContainerError

_log = logging.getLogger(__name__)
FILLER_SUFFIX = "-fill"
#: marks the filler container, so removals take trial containers first (its volumes are in use
#: until the trial container is gone)
LABEL_ROLE = "tbflow.role"


def container_name(job_id: str, trial_id: str) -> str:
    return "tbflow-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", f"{job_id[:12]}-{trial_id}")[:200]


def remove_container(name_or_id: str) -> None:
    """Remove a container (gone already is fine); raise ``ContainerError`` when the engine fails,
    also when it does not answer at all (a requests error, not a ``DockerException``)."""
    try:
        get_client().api.remove_container(name_or_id, force=True, v=True)
    except NotFound:
        pass
    except DOCKER_ERRORS as exc:
        if "is already in progress" not in str(exc) and "No such container" not in str(exc):
            raise ContainerError("cleanup", f"could not remove container {name_or_id}: {exc}") from exc


def remove_trial_container(job_id: str, trial_id: str) -> None:
    """Remove a trial's container if it exists; a failure is left to the job-level cleanup."""
    try:
        remove_trial(container_name(job_id, trial_id))
    except ContainerError:
        pass


def remove_trial(name: str) -> None:
    """The trial container, then its filler, or its bind-mounted tests dir where the engine runs
    here (no filler was made then: one engine call fewer per trial)."""
    remove_container(name)
    if not remove_host_tests(name):
        remove_container(name + FILLER_SUFFIX)


def remove_job_containers(job_id: str, label: str = LABEL_JOB) -> int:
    """Remove every container whose ``label`` is ``job_id`` (leftovers of a crash, or on Ctrl-C).

    ``label`` may be ``LABEL_FLOW_RUN`` to remove what one Prefect flow run started.
    """
    return remove_listed(get_client().api.containers(all=True, filters={"label": f"{label}={job_id}"}))


def remove_listed(containers: list[dict]) -> int:
    """Remove the containers of an engine listing (``{"Id": ...}`` dicts); return how many went.

    A removal that fails is logged, never raised: it must not mask why a job is stopping, and the
    leftover keeps its labels, so the next command that touches the job removes it.
    """
    n = 0
    # trial containers first: a filler's volumes are in use until its trial container is gone
    for c in sorted(containers, key=lambda c: (c.get("Labels") or {}).get(LABEL_ROLE) == "filler"):
        try:
            remove_container(c["Id"])
            n += 1
        except ContainerError as exc:
            _log.warning("%s", exc)
            continue
        for name in c.get("Names") or []:  # a trial's bind-mounted tests dir (judge_mounts)
            remove_host_tests(name.lstrip("/"))
    return n
