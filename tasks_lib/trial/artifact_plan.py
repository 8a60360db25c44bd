"""Which artifacts a trial collects and where each one lands (pure: no Docker, no files).

A task in the current Harbor format names paths of the agent's container to keep after the agent
phase (``artifacts``); Harbor always adds the convention directory ``/logs/artifacts``. They are
copied into the trial's ``artifacts/`` with a ``manifest.json`` in Harbor's own format, so a Harbor
export and Harbor's regrade read them, and a separate verifier gets exactly these paths back, each
at its ``source``. Where an entry lands on the host is Harbor's rule: ``destination`` if given,
else the source without its leading ``/`` (``/app/out.txt`` → ``artifacts/app/out.txt``).
"""

from __future__ import annotations

import fnmatch
from pathlib import PurePosixPath
from tasks_lib.task.task_model import ArtifactSpec

#: the directory an agent may publish into without the task naming it (Harbor's convention)
CONVENTION_DIR = "/logs/artifacts"
MANIFEST = "manifest.json"
#: an artifact's archive larger than this is not kept (a ``failed`` entry says so): what a path
#: holds is the agent's doing, and a separate verifier would otherwise judge a cut copy
MAX_ARTIFACT_BYTES = 1 << 30
COPY_TIMEOUT_SEC = 120.0


def collected(declared: list[ArtifactSpec]) -> list[ArtifactSpec]:
    """The task's entries with the convention directory first, unless the task names it itself
    (an explicit entry, e.g. with ``exclude``, replaces the implicit one, as in Harbor)."""
    if any(a.source.rstrip("/") == CONVENTION_DIR for a in declared):
        return list(declared)
    return [ArtifactSpec(source=CONVENTION_DIR), *declared]


def host_relative(entry: ArtifactSpec) -> PurePosixPath:
    """Where the entry lands under the trial's ``artifacts/`` (never outside it: the model refuses
    ``..`` and absolute destinations, and the source's anchor is dropped)."""
    if entry.destination:
        return PurePosixPath(entry.destination.rstrip("/"))
    parts = [p for p in PurePosixPath(entry.source).parts if p not in ("", "/", "..")]
    return PurePosixPath(*parts) if parts else PurePosixPath("root")


def excluded(relative: str, patterns: list[str]) -> bool:
    """Whether a member (its path below the artifact's top) matches an ``exclude`` pattern the way
    GNU tar's ``--exclude`` does by default: the pattern may match any run of whole components
    (``*.pyc`` at any depth, ``cache`` anywhere, ``build/tmp`` below any directory)."""
    parts = [p for p in relative.split("/") if p]
    for pattern in patterns:
        pattern = pattern.strip("/")
        if not pattern:
            continue
        for start in range(len(parts)):
            for end in range(start + 1, len(parts) + 1):
                if fnmatch.fnmatchcase("/".join(parts[start:end]), pattern):
                    return True
    return False


def overlapping(entries: list[ArtifactSpec]) -> dict[int, int]:
    """Entries whose host place lies in or on an earlier one's (index → the earlier index):
    Harbor keeps the first claimant and skips the later one rather than overwrite it."""
    claimed: list[tuple[int, PurePosixPath]] = []
    clashes: dict[int, int] = {}
    for i, entry in enumerate(entries):
        place = host_relative(entry)
        for j, earlier in claimed:
            if place == earlier or earlier in place.parents or place in earlier.parents:
                clashes[i] = j
                break
        else:
            claimed.append((i, place))
    return clashes
