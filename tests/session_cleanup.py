"""What a test session may remove at its end: only what it created.

Containers and images are told apart by labels that name where they came from: a trial
container's job dir (``tbflow.job_dir``) and a task image's build context (``tbflow.context``).
Only those under the session's temporary dir (pytest's basetemp) are its own; a user's job, the
examples' images and another session's work on the same engine are never touched. Each listing is
one API call without a per-object inspect, which would fail when another session removes an
object meanwhile.
"""

from __future__ import annotations

import os

from tasks_lib.container.docker_client import LABEL_CONTEXT, LABEL_JOB_DIR, LABEL_TRIAL
from tasks_lib.job.job_orphans import list_containers


def _under(path: str | None, base: str) -> bool:
    root = os.path.realpath(base) + os.sep
    return path is not None and os.path.realpath(path).startswith(root)


def own_containers(base: str) -> list[dict]:
    """Trial containers of jobs under ``base``."""
    return [c for c in list_containers(LABEL_TRIAL) if _under((c.get("Labels") or {}).get(LABEL_JOB_DIR), base)]


def own_images(api, base: str) -> list[str]:
    """References (tags, or the id of an untagged image) of task images built from dirs under ``base``."""
    refs = []
    for image in api.images(filters={"label": LABEL_CONTEXT}):
        if _under((image.get("Labels") or {}).get(LABEL_CONTEXT), base):
            tags = [t for t in image.get("RepoTags") or [] if t != "<none>:<none>"]
            refs.extend(tags or [image["Id"]])  # an image built twice at once ends untagged
    return refs
