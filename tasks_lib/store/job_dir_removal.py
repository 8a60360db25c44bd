"""Removing a job directory touches only what tbflow wrote there, and never follows a link.

Retention (``tbflow gc --keep-jobs/--older-than``) removes whole job directories; a mistaken user
may have linked an archive into the jobs dir, or kept notes inside a job directory. Both must
survive: a job directory that is itself a link is never entered (``os.open`` with
``O_NOFOLLOW``); inside it, only the entries tbflow writes (``TBFLOW_ENTRIES``, the lock and the
temp files of atomic writes) are removed, each through the directory's file descriptor so a link
swapped in meanwhile is not followed either (``shutil.rmtree(dir_fd=...)`` removes links inside a
tree as links). A link with one of tbflow's names is removed as a link, its target untouched.
Anything else is kept and reported, and the job directory then stays.

Why names at the top level and not a manifest of every file: a trial's directory holds the logs
the container made (any names), all of them written by tbflow's download; the user's own files
live beside tbflow's, not among a trial's downloaded logs.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from pathlib import Path

from pydantic import BaseModel, Field

from tasks_lib.store.job_lock import LOCK_NAME
from tasks_lib.store.job_store import JOB_FILE
from tasks_lib.store.remote_store import JOB_LOG_DIRS, PRICES_FILE, REPORT_FILES, REPORT_PAGES

#: what tbflow writes at the top of a job directory (tasks_lib/store/job_store.py's layout, the
#: reports, the job-level logs, the retry bookkeeping of flows/trial_flow.py)
#: ("builds": older jobs' build logs, which tasks_lib/report/report_inputs.py still reads)
TBFLOW_ENTRIES = frozenset({JOB_FILE, PRICES_FILE, "trials", "attempts", ".retries", *REPORT_FILES, REPORT_PAGES,
                            *JOB_LOG_DIRS, "builds"})
#: a temp file of ``write_atomic`` (``.<name>.<random>``) left by a crash
_WRITTEN_ATOMICALLY = (JOB_FILE, PRICES_FILE, *REPORT_FILES)
_ATOMIC_TEMP = re.compile(r"^\.(" + "|".join(re.escape(n) for n in _WRITTEN_ATOMICALLY) + r")\.[A-Za-z0-9_]+$")


class NotAJobDir(Exception):
    """The path is a link or not a directory: it is not entered."""


class Removal(BaseModel):
    """What removing one job directory did."""

    refused: str | None = Field(default=None, description="Why nothing was removed (a live holder).")
    links: list[str] = Field(default_factory=list, description="Links removed as links, targets untouched.")
    kept: list[str] = Field(default_factory=list, description="Entries tbflow did not write, left in place.")
    removed_dir: bool = False


def written_by_tbflow(name: str) -> bool:
    """True for a top-level entry of a job directory that tbflow writes (the decision, no I/O)."""
    return name in TBFLOW_ENTRIES or name.startswith(LOCK_NAME) or bool(_ATOMIC_TEMP.match(name))


def open_dir_nofollow(path: Path) -> int:
    """A file descriptor of the directory ``path``; ``NotAJobDir`` when it is a link or no dir."""
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW)
    except (NotADirectoryError, FileNotFoundError) as exc:
        raise NotAJobDir(f"{path}: not a directory") from exc
    except OSError as exc:
        if os.path.islink(path):
            raise NotAJobDir(f"{path}: a symbolic link (to {os.readlink(path)}), not followed") from exc
        raise


def remove_tbflow_entries(dir_fd: int, out: Removal) -> None:
    """Remove what tbflow wrote in the directory ``dir_fd`` except the lock (its holder removes it
    on release); note links and the entries kept in ``out``."""
    for entry in sorted(os.scandir(dir_fd), key=lambda e: e.name):
        name = entry.name
        if name.startswith(LOCK_NAME):
            continue
        if not written_by_tbflow(name):
            out.kept.append(name)
            continue
        mode = os.lstat(name, dir_fd=dir_fd).st_mode
        if stat.S_ISDIR(mode):
            shutil.rmtree(name, dir_fd=dir_fd)
        else:
            if stat.S_ISLNK(mode):
                out.links.append(name)
            os.unlink(name, dir_fd=dir_fd)


def preview(job_dir: Path) -> Removal:
    """What ``remove_tbflow_entries`` would do in ``job_dir`` (for ``--dry-run``), removing nothing."""
    out = Removal()
    try:
        dir_fd = open_dir_nofollow(job_dir)
    except NotAJobDir as exc:
        return Removal(refused=str(exc))
    try:
        for entry in sorted(os.scandir(dir_fd), key=lambda e: e.name):
            if not written_by_tbflow(entry.name):
                out.kept.append(entry.name)
            elif entry.is_symlink():
                out.links.append(entry.name)
    finally:
        os.close(dir_fd)
    return out
