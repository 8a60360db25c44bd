"""Reading a job directory for reporting: records, log tails, and where evidence lives.

Reports must work on any job directory, including one copied from another machine, a job still
running, or one written by an older tbflow, so reading here is tolerant: a trial record that does
not parse is reported (with the file and the first validation message) instead of aborting the
whole report, and a log that is missing simply has no tail.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from pydantic import ValidationError

from tasks_lib.store.job_store import TRIAL_FILE, JobStore
from tasks_lib.records.record_models import JobRecord, TrialRecord
from tasks_lib.text_clean import shorten, visible

TAIL_LINES = 20
TAIL_LINE_CHARS = 400
_TAIL_BYTES = 64 * 1024


@dataclass
class LoadedJob:
    """What a job directory holds: the job record, every readable trial record, and the rest."""

    job_dir: Path
    job: JobRecord
    trials: list[TrialRecord]
    unreadable: list[tuple[str, str]] = field(default_factory=list)  # (job-relative path, message)


def load_job(job_dir: Path) -> LoadedJob:
    """Read ``job.json`` (InputError when absent or broken) and every ``trial.json`` found."""
    store = JobStore(job_dir)
    job = store.read_job()
    trials: list[TrialRecord] = []
    unreadable: list[tuple[str, str]] = []
    root = Path(job_dir) / "trials"
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        path = d / TRIAL_FILE
        if not path.is_file():
            continue
        rel = f"trials/{d.name}/{TRIAL_FILE}"
        try:
            trials.append(TrialRecord.model_validate_json(path.read_bytes()))
        except ValidationError as exc:
            err = exc.errors()[0]
            where = ".".join(str(p) for p in err.get("loc", ()))
            unreadable.append((rel, f"{where}: {err['msg']}" if where else err["msg"]))
        except (OSError, json.JSONDecodeError, UnicodeDecodeError) as exc:
            unreadable.append((rel, str(exc)))
    return LoadedJob(Path(job_dir), job, trials, unreadable)


def trial_dir_rel(trial_id: str) -> str:
    return f"trials/{trial_id}"


def job_relative(job_dir: Path | None, trial_id: str, path: str | None) -> str | None:
    """A record's path (relative to the trial dir) as a path relative to the job dir.

    Records say their paths are relative to the trial directory, but an environment failure's
    evidence is documented (tasks_lib.errors) as relative to the job directory, e.g. a build log
    under ``builds/``. When the job dir is at hand and the trial-relative reading does not exist
    while the job-relative one does, the latter is used. Absolute paths inside the job dir are
    made relative; other absolute paths are shown as they are.
    """
    if not path:
        return None
    p = PurePosixPath(path.replace("\\", "/"))
    if p.is_absolute():
        if job_dir is not None:
            try:
                return Path(path).resolve().relative_to(Path(job_dir).resolve()).as_posix()
            except ValueError:
                pass
        return path
    in_trial = os.path.normpath(f"{trial_dir_rel(trial_id)}/{p}").replace("\\", "/")
    if job_dir is not None and not (job_dir / in_trial).exists():
        in_job = os.path.normpath(str(p)).replace("\\", "/")
        if not in_job.startswith("..") and (job_dir / in_job).exists():
            return in_job
    return in_trial


def log_tail(job_dir: Path | None, rel_path: str | None, lines: int = TAIL_LINES) -> list[str]:
    """The last ``lines`` non-empty-at-the-end lines of a job-relative log, each as ``visible``
    shows it (colour codes and control characters as escapes, safe for XML and a terminal)."""
    if job_dir is None or not rel_path or PurePosixPath(rel_path).is_absolute():
        return []
    path = job_dir / rel_path
    try:
        with path.open("rb") as fh:
            size = fh.seek(0, os.SEEK_END)
            fh.seek(max(0, size - _TAIL_BYTES))
            data = fh.read()
    except OSError:
        return []
    text = data.decode("utf-8", errors="replace")
    # split on "\n" only: str.splitlines() also breaks at \x0b, \x0c, \x1c-\x1e, which are log content
    out = [shorten(visible(line.rstrip(), multiline=True), TAIL_LINE_CHARS) for line in text.split("\n")]
    if size > _TAIL_BYTES and out:
        out = out[1:]  # the first line is probably cut in the middle
    while out and not out[-1].strip():
        out.pop()
    return out[-lines:]
