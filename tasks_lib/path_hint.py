"""Whether a ``DATASET`` argument that names nothing was meant as a path, and which paths are close.

Why: ``examples/taskz`` (a typo of ``examples/tasks``) has the shape of a package name
(``org/name``), so it was looked up in the registry and the user read about registries and git
URLs instead of "no such directory". A word whose parent directory exists here (``examples/``)
is taken as a path; a package name is written with ``@REF`` to say otherwise. Pure functions over
what one directory listing shows.
"""

from __future__ import annotations

import difflib
from pathlib import Path


def meant_as_path(text: str) -> bool:
    """``text`` has a ``/``, no ``@``, and everything before its last ``/`` is a directory here."""
    if "/" not in text or "@" in text:
        return False
    parent = Path(text.rstrip("/")).expanduser().parent
    return str(parent) not in ("", ".") and parent.is_dir()


def close_paths(text: str, limit: int = 3) -> list[str]:
    """Directories next to where ``text`` points whose names are close to its last part."""
    path = Path(text.rstrip("/")).expanduser()
    parent = path.parent
    try:
        names = sorted(p.name for p in parent.iterdir() if p.is_dir())
    except OSError:
        return []
    found = difflib.get_close_matches(path.name, names, n=limit, cutoff=0.6)
    return [str(parent / n) if str(parent) != "." else n for n in found]


def missing_dir_message(text: str) -> str:
    """``X: no such directory (it does not exist; did you mean Y?)``."""
    close = close_paths(text)
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    return f"{text}: no such directory (it does not exist{hint})"
