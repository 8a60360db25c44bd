"""The sha256 of a file, read in 1 MiB blocks (a task's files, a downloaded Node runtime)."""

from __future__ import annotations

import hashlib
from pathlib import Path


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at ``path``, without reading it into memory at once."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
