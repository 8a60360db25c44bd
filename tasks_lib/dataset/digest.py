"""Harbor's task content digest, so a digest tbflow records compares with Harbor's.

The algorithm is Harbor's ``Packager.compute_content_hash`` (src/harbor/publisher/packager.py):
the files ``task.toml``, ``instruction.md``, ``README.md`` and ``trajectory.json`` plus every file
under ``environment/``, ``tests/``, ``solution/`` and ``steps/``; minus what the task's
``.gitignore`` ignores (or, without one, ``__pycache__/ *.pyc .DS_Store *.swp *.swo *~``); sorted
by POSIX relative path; digest = sha256 of the concatenated lines ``f"{rel}\\0{sha256(file)}\\n"``.
A dataset's digest is sha256 of the sorted task hex digests joined by ``,``
(``DatasetManifest.compute_content_hash``, without dataset-level files).

``file_hashes`` hashes every file of a task dir once; the digest is computed from that map, so
verifying a cached task reads each file once and can still say which file changed.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from pathspec import GitIgnoreSpec

from tasks_lib.file_sha256 import sha256_file

TOP_FILES = ("task.toml", "instruction.md", "README.md", "trajectory.json")
TREES = ("environment", "tests", "solution", "steps")
DEFAULT_IGNORES = ("__pycache__/", "*.pyc", ".DS_Store", "*.swp", "*.swo", "*~")
PREFIX = "sha256:"


def file_hashes(task_dir: Path) -> dict[str, str]:
    """sha256 hex of every file under ``task_dir`` by POSIX relative path (a link out of it: by its target name)."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(task_dir):
        dirnames.sort()
        base = Path(dirpath)
        for name in sorted(filenames):
            path = base / name
            rel = path.relative_to(task_dir).as_posix()
            if path.is_symlink() and not _inside(path, task_dir):  # never read a file outside the task
                out[rel] = hashlib.sha256(b"symlink\0" + os.readlink(path).encode()).hexdigest()
            elif path.is_file():  # a link to a file of the task counts by its content, as in Harbor
                out[rel] = sha256_file(path)
    return out


def _inside(link: Path, root: Path) -> bool:
    try:
        link.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return False
    return link.resolve().is_file()


def _ignore_spec(task_dir: Path) -> GitIgnoreSpec:
    gitignore = task_dir / ".gitignore"
    lines = gitignore.read_text(encoding="utf-8").splitlines() if gitignore.is_file() else list(DEFAULT_IGNORES)
    return GitIgnoreSpec.from_lines(lines)


def digested_files(task_dir: Path, hashes: dict[str, str]) -> list[str]:
    """The relative paths of ``hashes`` that Harbor's digest covers, sorted."""
    spec = _ignore_spec(task_dir)
    chosen = [rel for rel in hashes if rel in TOP_FILES or rel.split("/", 1)[0] in TREES and "/" in rel]
    return sorted(rel for rel in chosen if not spec.match_file(rel))


def task_digest(task_dir: Path, hashes: dict[str, str] | None = None) -> str:
    """``sha256:<hex>`` of a task directory, Harbor's way (``hashes``: ``file_hashes`` of it, if known)."""
    hashes = file_hashes(task_dir) if hashes is None else hashes
    h = hashlib.sha256()
    for rel in digested_files(task_dir, hashes):
        h.update(f"{rel}\0{hashes[rel]}\n".encode())
    return PREFIX + h.hexdigest()


def dataset_digest(task_digests: list[str]) -> str:
    """Harbor's dataset digest over its tasks' digests (``sha256:<hex>`` each)."""
    hexes = sorted(d.removeprefix(PREFIX) for d in task_digests)
    return PREFIX + hashlib.sha256(",".join(hexes).encode()).hexdigest()
