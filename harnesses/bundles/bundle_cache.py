"""The host-side cache that harness bundles are built into: atomic directories with a manifest.

Harness bundles are large (a single CLI binary is 185-400 MB) and several trials, flows or
processes may prepare the same one at the same moment. The cache therefore never shows a
half-written entry: each entry is built in a temporary directory *beside* its final path and
published with one ``os.rename``. When two builders race, the first rename wins and the loser
discards its copy. No lock files are used, so a builder that crashes leaves only a ``.tmp-*``
directory behind, never a broken entry.

Every entry holds ``manifest.json`` with the identity of what was built (e.g. the package
integrity) and the size of every file. A cache hit re-checks that manifest against the caller's
expectation and stats each file: cheap (no hashing), and enough to catch an interrupted copy, a
truncated file or a deleted one. It is not a defence against someone who can write the cache
directory; the content was hash-verified once, when it was built.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any, Callable

MANIFEST = "manifest.json"


def inventory(root: Path) -> dict[str, Any]:
    """Regular files (relative path → size) and symlinks (relative path → target) under ``root``."""
    files: dict[str, int] = {}
    links: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        for name in filenames + [d for d in dirnames if (base / d).is_symlink()]:
            path = base / name
            rel = path.relative_to(root).as_posix()
            if rel == MANIFEST:
                continue
            if path.is_symlink():
                links[rel] = os.readlink(path)
            elif path.is_file():
                files[rel] = path.stat().st_size
    return {"files": dict(sorted(files.items())), "links": dict(sorted(links.items()))}


def read_valid(entry: Path, expect: dict[str, Any]) -> dict[str, Any] | None:
    """The entry's manifest when it matches ``expect`` and every recorded file is intact, else None."""
    try:
        manifest = json.loads((entry / MANIFEST).read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(manifest, dict) or any(manifest.get(k) != v for k, v in expect.items()):
        return None
    files, links = manifest.get("files"), manifest.get("links", {})
    if not isinstance(files, dict) or not isinstance(links, dict):
        return None
    for rel, size in files.items():
        try:
            st = os.lstat(entry / rel)
        except OSError:
            return None
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return None
    for rel, target in links.items():
        try:
            if os.readlink(entry / rel) != target:
                return None
        except OSError:
            return None
    return manifest


def discard(path: Path) -> None:
    """Remove a directory so that no reader ever sees it half-deleted: rename it aside first."""
    if not path.exists():
        return
    aside = path.with_name(f".discard-{path.name}-{os.getpid()}-{os.urandom(4).hex()}")
    try:
        os.rename(path, aside)
    except OSError:
        return  # someone else moved or replaced it meanwhile
    shutil.rmtree(aside, ignore_errors=True)


def build_atomically(final: Path, expect: dict[str, Any],
                     build: Callable[[Path], dict[str, Any]]) -> dict[str, Any]:
    """Return the manifest of the valid cache entry ``final``, building it if needed.

    ``build(tmp)`` fills the empty directory ``tmp`` and returns extra manifest fields; the
    manifest gets ``expect`` plus the inventory of ``tmp``. A broken entry at ``final`` (no or
    mismatched manifest, missing or resized file) is discarded and rebuilt.
    """
    manifest = read_valid(final, expect)
    if manifest is not None:
        return manifest
    if final.exists() and read_valid(final, expect) is None:
        discard(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".tmp-{final.name}-", dir=final.parent))
    try:
        extra = build(tmp)
        manifest = {**extra, **expect, **inventory(tmp)}
        (tmp / MANIFEST).write_text(json.dumps(manifest, indent=1, sort_keys=True))
        tmp.chmod(0o755)  # mkdtemp made it 0700; bundles are read by the container's agent user
        try:
            os.rename(tmp, final)
        except OSError:
            # Another builder published first (rename onto a non-empty directory fails).
            theirs = read_valid(final, expect)
            if theirs is None:
                raise
            return theirs
        return manifest
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
