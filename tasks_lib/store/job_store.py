"""The job directory on disk: where each record and log lives, written atomically.

Layout::

    JOB_DIR/job.json
    JOB_DIR/trials/<trial_id>/trial.json      only once the trial finished
    JOB_DIR/trials/<trial_id>/build.log       when this trial built (or failed to build) its image
    JOB_DIR/trials/<trial_id>/agent/          agent logs downloaded from /logs/agent
    JOB_DIR/trials/<trial_id>/verifier/       verifier output downloaded from /logs/verifier
    JOB_DIR/attempts/<trial_id>/<n>/          earlier tries of a trial re-run by --rerun-invalid

Records are written to a temp file in the same directory and renamed, so a reader (or a resume
after a crash) sees either the whole record or none.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from pydantic import BaseModel, ValidationError

from tasks_lib.errors import InputError
from tasks_lib.records.record_models import JobRecord, TrialRecord
from tasks_lib.store.remote_store import mirror_for

JOB_FILE = "job.json"
TRIAL_FILE = "trial.json"


def process_umask() -> int:
    """This process's umask, read without changing it (``os.umask`` sets it process-wide, a race
    with every thread that creates a file meanwhile)."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    return 0o022


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` so that it appears whole or not at all.

    The file gets the mode a plain ``open`` would give it (0666 less the umask), not the 0600 of
    ``mkstemp``: a teammate of the group on a shared jobs path must be able to read the records.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        os.fchmod(fd, 0o666 & ~process_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_model(path: Path, model: BaseModel) -> None:
    write_atomic(path, model.model_dump_json(indent=2) + "\n")


class JobStore:
    """Paths and record I/O for one job directory."""

    def __init__(self, job_dir: Path) -> None:
        self.job_dir = Path(job_dir)

    @property
    def job_file(self) -> Path:
        return self.job_dir / JOB_FILE

    def trial_dir(self, trial_id: str) -> Path:
        return self.job_dir / "trials" / trial_id

    def write_job(self, record: JobRecord) -> None:
        write_model(self.job_file, record)
        if (mirror := mirror_for(self.job_dir)) is not None:  # a job in a store (remote_store.py)
            mirror.push_top()

    def read_job(self) -> JobRecord:
        try:
            return JobRecord.model_validate_json(self.job_file.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise InputError(str(self.job_dir), f"not a tbflow job directory (no {JOB_FILE})") from exc
        except ValidationError as exc:
            raise InputError(str(self.job_file), f"unreadable job record: {exc.errors()[0]['msg']}") from exc

    def write_trial(self, record: TrialRecord) -> None:
        write_model(self.trial_dir(record.trial_id) / TRIAL_FILE, record)
        if (mirror := mirror_for(self.job_dir)) is not None:  # the trial's dir, its record last
            mirror.trial_recorded(record.trial_id)

    def read_trial(self, trial_id: str) -> TrialRecord | None:
        """The finished trial's record, or None when it has none (never ran or was interrupted)."""
        path = self.trial_dir(trial_id) / TRIAL_FILE
        try:
            return TrialRecord.model_validate_json(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (ValidationError, UnicodeDecodeError):
            # Records are written atomically, so this is damage from outside; treat the trial
            # as not finished (it runs again) rather than let one file stop the job.
            return None

    def trial_records(self) -> list[TrialRecord]:
        """Every finished trial's record, sorted by trial id."""
        root = self.job_dir / "trials"
        if not root.is_dir():
            return []
        records = []
        for d in sorted(root.iterdir()):
            rec = self.read_trial(d.name)
            if rec is not None:
                records.append(rec)
        return records

    def history_dir(self, trial_id: str) -> Path:
        return self.job_dir / "attempts" / trial_id

    def previous_tries(self, trial_id: str) -> int:
        d = self.history_dir(trial_id)
        return sum(1 for p in d.iterdir() if p.is_dir()) if d.is_dir() else 0

    def archive_trial(self, trial_id: str) -> Path:
        """Move a recorded trial into ``attempts/<trial_id>/<n>/`` so a re-run loses nothing."""
        n = self.previous_tries(trial_id) + 1
        dest = self.history_dir(trial_id) / str(n)
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(self.trial_dir(trial_id), dest)
        if (mirror := mirror_for(self.job_dir)) is not None:
            mirror.archived(trial_id, n)
        return dest

    def reset_trial_dir(self, trial_id: str) -> Path:
        """Empty the trial dir before a (re)run so no stale log is mistaken for this run's."""
        d = self.trial_dir(trial_id)
        if d.exists():
            shutil.rmtree(d)
        d.mkdir(parents=True)
        return d
