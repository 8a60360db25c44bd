"""How much of the host's disk a container's writable layer takes, read from the host.

Why read it ourselves: on overlay2 over ext4 (this kind of host) the engine has no quota for a
container's writable layer (``--storage-opt size=`` needs xfs with ``pquota``), so ``[environment]
storage_mb`` can only be held by measuring (``tasks_lib/trial/storage_watch.py``). The engine's own
``SizeRw`` walks the whole layer too and counts a sparse file at its apparent size; walking the
overlay's upper directory counts the blocks really allocated, which is what fills a disk, at the
cost of what the agent wrote (not of what the image holds). The walk follows no link the agent
made (``upper_walk.py``).
"""

from __future__ import annotations

import heapq
import stat
from dataclasses import dataclass, field

from tasks_lib.container.upper_walk import walk_upper

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
    for path, st in walk_upper(upper):
        if out.entries >= max_entries:
            out.capped = True
            break
        out.entries += 1
        used = st.st_blocks * 512
        out.bytes += used
        if used and not stat.S_ISDIR(st.st_mode):
            out.largest.append((used, path))
    out.largest = heapq.nlargest(LARGEST, out.largest)
    return out
