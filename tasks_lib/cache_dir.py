"""Where tbflow keeps what it can rebuild: ``$TBFLOW_CACHE_DIR``, else ``~/.cache/tbflow``.

One definition for the bundle cache, the build locks, the trial history and the dataset cache, so
setting the variable moves all of them together.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$TBFLOW_CACHE_DIR`` when set, else ``~/.cache/tbflow``."""
    override = os.environ.get("TBFLOW_CACHE_DIR")
    return Path(override) if override else Path.home() / ".cache" / "tbflow"
