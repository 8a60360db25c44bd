"""How much of the host's disk a container's writable layer takes, read from the host.

Why read it ourselves: on overlay2 over ext4 (this kind of host) the engine has no quota for a
container's writable layer (``--storage-opt size=`` needs xfs with ``pquota``), so ``[environment]
storage_mb`` can only be held by measuring (``tasks_lib/trial/storage_watch.py``). The engine's own
``SizeRw`` walks the whole layer too and counts a sparse file at its apparent size; walking the
overlay's upper directory counts the blocks really allocated, which is what fills a disk, at the
cost of what the agent wrote (not of what the image holds). Directories are opened relative to
their parent's descriptor, never by path, so no link the agent made is followed.
"""

from __future__ import annotations

import heapq
import os
import stat
from dataclasses import dataclass, field

#: entries read in one walk at most: an agent can create millions of empty files
MAX_ENTRIES = 1_000_000
#: the largest files kept as evidence
LARGEST = 5


@dataclass
class LayerUsage:
    """One walk of the upper directory: allocated bytes, entries, the largest files."""

    bytes: int = 0
    entries: int = 0
    #: (allocated bytes, path in the container)
    largest: list[tuple[int, str]] = field(default_factory=list)
    #: the walk stopped at ``MAX_ENTRIES`` (more than that many entries: bytes is a lower bound)
    capped: bool = False


def layer_usage(upper: str, max_entries: int = MAX_ENTRIES) -> LayerUsage:
    """Walk ``upper`` (the overlay's upper directory); raises ``OSError`` when it cannot be opened."""
    out = LayerUsage()
    stack = [("", os.open(upper, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC))]
    try:
        while stack and not out.capped:
            rel, fd = stack.pop()
            try:
                _walk_dir(rel, fd, out, stack, max_entries)
            finally:
                os.close(fd)
    finally:
        for _, fd in stack:
            os.close(fd)
    out.largest = heapq.nlargest(LARGEST, out.largest)
    return out


def _walk_dir(rel: str, fd: int, out: LayerUsage, stack: list[tuple[str, int]], max_entries: int) -> None:
    try:
        with os.scandir(fd) as it:
            children = list(it)
    except OSError:  # gone while we walked (the agent removed it): nothing to count
        return
    for child in children:
        if out.entries >= max_entries:
            out.capped = True
            return
        try:
            st = os.stat(child.name, dir_fd=fd, follow_symlinks=False)
        except OSError:
            continue
        out.entries += 1
        used = st.st_blocks * 512
        out.bytes += used
        path = f"{rel}/{child.name}"
        if stat.S_ISDIR(st.st_mode):
            try:
                stack.append((path, os.open(child.name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                                            dir_fd=fd)))
            except OSError:
                continue
        elif used:
            out.largest.append((used, path))
            if len(out.largest) > 4 * LARGEST:  # keep the list small on a layer of many files
                out.largest = heapq.nlargest(LARGEST, out.largest)
