"""Retention of finished jobs: ``tbflow gc --jobs-dir jobs --match 'nightly-*' --keep-jobs 14``.

A nightly deployment makes one job directory a night (``nightly-{date}``), with every trial's
logs in it; nothing else ever removes them. ``select`` decides, from what ``job.json`` and the
job's lock say, which job directories a rule removes; ``remove_job`` removes one.

The rule (docs/deployments.md "Nightly runs"): among the job directories under ``jobs_dir`` whose
name matches ``match`` (a glob), a job is removed only when

* it is finished (``job.json`` has ``ended_at``: its last run got to the end; an interrupted or
  crashed job is kept, to be resumed or removed by hand), and
* no live process holds its lock (``job_lock``: a job being run or resumed is never touched), and
* it is beyond the newest ``keep`` jobs (by start time), when ``keep`` is given, and
* it ended more than ``older_than`` ago, when that is given.

Both limits given: a job goes only when both say so (at least ``keep`` jobs stay, and every job
younger than ``older_than``). Removal takes the job's lock first, so a run starting at that moment
is refused instead of losing its directory, and deletes the lock file last.

Removal deletes only what tbflow wrote, inside ``jobs_dir`` (``job_dir_removal``): an entry of
``jobs_dir`` that is a link is never followed (it is listed and left alone), and files in a job
directory that tbflow did not write are kept and listed (the directory then stays).
"""

from __future__ import annotations

import fnmatch
import os
import re
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Callable

from pydantic import BaseModel, Field

from tasks_lib.errors import InputError
from tasks_lib.store.job_dir_removal import NotAJobDir, Removal, open_dir_nofollow, preview, remove_tbflow_entries
from tasks_lib.store.job_lock import JobLock, JobLockedError, describe_holder, lock_state
from tasks_lib.store.job_store import JobStore
from tasks_lib.store.remote_store import is_url

_AGE = re.compile(r"^(\d+)([dhm])$")
_UNIT = {"d": "days", "h": "hours", "m": "minutes"}


class JobEntry(BaseModel):
    """What retention needs to know of one job directory."""

    name: str
    path: str
    started_at: datetime | None = None
    ended_at: datetime | None = None
    held_by: str | None = Field(default=None, description="The live holder of its lock, if any.")
    link_to: str | None = Field(default=None, description="Where it points when it is a link (never followed).")
    unreadable: str | None = Field(default=None, description="Why job.json could not be read.")


class Decision(BaseModel):
    remove: list[JobEntry] = Field(default_factory=list)
    keep: dict[str, str] = Field(default_factory=dict, description="job name -> why it stays")


def parse_age(text: str, where: str = "--older-than") -> timedelta:
    """``14d``, ``36h`` or ``90m`` as a timedelta; anything else is an ``InputError`` on ``where``."""
    m = _AGE.match(text.strip())
    if m is None or int(m.group(1)) == 0:
        raise InputError(where, f"{text!r}: give a positive age such as 14d, 36h or 90m")
    return timedelta(**{_UNIT[m.group(2)]: int(m.group(1))})


def scan(jobs_dir: Path, match: str) -> list[JobEntry]:
    """Every directory under ``jobs_dir`` whose name matches the glob ``match``; a matching link is
    listed with ``link_to`` and not read through."""
    entries = []
    for d in sorted(Path(jobs_dir).iterdir()) if Path(jobs_dir).is_dir() else []:
        if not fnmatch.fnmatchcase(d.name, match):
            continue
        if d.is_symlink():
            entries.append(JobEntry(name=d.name, path=str(d), link_to=os.readlink(d)))
            continue
        if not d.is_dir():
            continue
        entry = JobEntry(name=d.name, path=str(d))
        state = lock_state(d)
        if state is not None and state[2]:
            entry.held_by = describe_holder(state[0], state[1])
        try:
            record = JobStore(d).read_job()
            entry.started_at, entry.ended_at = record.started_at, record.ended_at
        except InputError as exc:
            entry.unreadable = exc.message
        entries.append(entry)
    return entries


def select(entries: list[JobEntry], keep: int | None, older_than: timedelta | None,
           now: datetime | None = None) -> Decision:
    """Which jobs the rule removes, and why each other one stays (see the module docstring)."""
    if keep is None and older_than is None:
        raise InputError("--keep-jobs/--older-than", "give at least one retention limit")
    now = now or datetime.now(timezone.utc)
    out = Decision()
    newest_first = sorted(entries, key=lambda e: e.started_at or datetime.max.replace(tzinfo=timezone.utc),
                          reverse=True)
    finished_seen = 0
    for e in newest_first:
        if e.link_to is not None:
            out.keep[e.name] = f"a symbolic link (to {e.link_to}): not followed, left alone"
        elif e.unreadable is not None:
            out.keep[e.name] = f"not a readable tbflow job ({e.unreadable})"
        elif e.held_by is not None:
            out.keep[e.name] = f"in use: {e.held_by}"
        elif e.ended_at is None:
            out.keep[e.name] = "unfinished (interrupted or crashed): resume it or remove it by hand"
        else:
            finished_seen += 1
            if keep is not None and finished_seen <= keep:
                out.keep[e.name] = f"one of the newest {keep}"
            elif older_than is not None and now - e.ended_at < older_than:
                out.keep[e.name] = f"ended less than {_age(older_than)} ago"
            else:
                out.remove.append(e)
    return out


def _age(delta: timedelta) -> str:
    secs = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if secs % size == 0:
            return f"{secs // size}{unit}"
    return f"{secs}s"


def remove_job(job_dir: Path) -> Removal:
    """Delete what tbflow wrote in ``job_dir`` under its lock, then the directory if nothing else is
    left in it; never through a link. ``refused`` says why nothing went (a live holder, a link)."""
    try:
        dir_fd = open_dir_nofollow(Path(job_dir))
    except NotAJobDir as exc:
        return Removal(refused=str(exc))
    out = Removal()
    try:
        try:
            lock = JobLock.acquire(job_dir)
        except JobLockedError as exc:
            return Removal(refused=exc.message)
        try:
            remove_tbflow_entries(dir_fd, out)
        finally:
            lock.release()  # removes the lock file
    finally:
        os.close(dir_fd)
    if not out.kept:
        try:
            os.rmdir(job_dir)
            out.removed_dir = True
        except OSError:  # a run took the (now empty) job between the release and here: it is its job now
            pass
    return out


def _say_removal(entry: JobEntry, verb: str, result: Removal, echo: Callable[[str], None]) -> None:
    echo(f"{verb} job {entry.path} (ended {entry.ended_at:%Y-%m-%d %H:%M} UTC)")
    if result.links:
        echo(f"  removed as links, their targets untouched: {', '.join(result.links)}")
    if result.kept:
        echo(f"  kept in {entry.path} (not written by tbflow; the directory stays): {', '.join(result.kept)}")


def apply_retention(jobs_dir: str | None, match: str, keep: int | None, older_than: str | None,
                    dry_run: bool, echo: Callable[[str], None]) -> int:
    """Apply the rule to ``jobs_dir``, saying through ``echo`` what it decided, one line per job and a
    summary (``tbflow gc`` prints them, the retention flow logs them: a nightly log says exactly
    what went); return how many job directories were (or would be) removed. ``dry_run`` only lists."""
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
        result = preview(Path(entry.path)) if dry_run else remove_job(Path(entry.path))
        if result.refused is None:
            removed += 1
            _say_removal(entry, verb, result, echo)
        else:
            echo(f"kept job {entry.path}: {result.refused}")
    for name, why in sorted(decision.keep.items()):
        echo(f"kept job {Path(jobs_dir) / name}: {why}")
    echo(f"{verb} {removed} job dir(s) matching {match!r} in {jobs_dir}; kept {len(decision.keep)}")
    return removed
