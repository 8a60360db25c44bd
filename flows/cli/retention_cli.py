"""``tbflow gc --keep-jobs N / --older-than AGE``: the retention part of ``gc`` (job directories).

The rule and its safety (finished jobs only, never a job a live run holds) are in
``tasks_lib/job/retention.py``; this prints what it decided, one line per job, and a summary, so a
nightly run's log says exactly what went. ``--dry-run`` only lists.
"""

from __future__ import annotations

from pathlib import Path
from typing import Callable

from tasks_lib.errors import InputError
from tasks_lib.job.remote_store import is_url
from tasks_lib.job.retention import parse_age, remove_job, scan, select


def apply_retention(jobs_dir: str | None, match: str, keep: int | None, older_than: str | None,
                    dry_run: bool, echo: Callable[[str], None]) -> int:
    """Apply the rule to ``jobs_dir``; return how many job directories were (or would be) removed."""
    if jobs_dir is None:
        raise InputError("--jobs-dir", "--keep-jobs and --older-than remove job directories: name their jobs dir")
    if is_url(jobs_dir):
        raise InputError("--jobs-dir", f"{jobs_dir}: retention removes local job directories; a store's jobs "
                                       "are removed with the store's own tools (lifecycle rules)")
    if not Path(jobs_dir).is_dir():
        raise InputError("--jobs-dir", f"{jobs_dir}: no such directory")
    age = parse_age(older_than) if older_than is not None else None
    decision = select(scan(Path(jobs_dir), match), keep, age)
    verb = "would remove" if dry_run else "removed"
    removed = 0
    for entry in decision.remove:
        why_not = None if dry_run else remove_job(Path(entry.path))
        if why_not is None:
            removed += 1
            echo(f"{verb} job {entry.path} (ended {entry.ended_at:%Y-%m-%d %H:%M} UTC)")
        else:
            echo(f"kept job {entry.path}: {why_not}")
    for name, why in sorted(decision.keep.items()):
        echo(f"kept job {Path(jobs_dir) / name}: {why}")
    echo(f"{verb} {removed} job dir(s) matching {match!r} in {jobs_dir}; kept {len(decision.keep)}")
    return removed
