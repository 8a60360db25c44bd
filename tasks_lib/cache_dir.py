"""Where tbflow keeps what it can rebuild: one directory, found one way.

``$TBFLOW_CACHE_DIR`` when set, else ``$XDG_CACHE_HOME/tbflow`` (the XDG base-directory rule for
user caches), else ``~/.cache/tbflow`` (docs/running-jobs.md, "The cache dir"). Every cache resolves under
it, so setting one variable moves all of them together: the harness bundles and npm packages
(``harnesses/bundles``), the static judge and relay binaries (``tasks_lib/container/static_build.py``),
the build locks, the dataset cache, the trial history, and the local copies of jobs kept in a
store (``tasks_lib/store/remote_store.py``). ``tests/test_every_cache_resolves_under_one_root.py``
pins it.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$TBFLOW_CACHE_DIR``, else ``$XDG_CACHE_HOME/tbflow``, else ``~/.cache/tbflow``."""
    if own := os.environ.get("TBFLOW_CACHE_DIR"):
        return Path(own)
    if xdg := os.environ.get("XDG_CACHE_HOME"):
        return Path(xdg) / "tbflow"
    return Path.home() / ".cache" / "tbflow"
