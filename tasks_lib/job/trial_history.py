"""How long earlier trials of a task took: the first source of a trial's expected duration.

Every job on the machine reads and writes one small SQLite file,
``trial-history.sqlite`` in the cache dir (``tasks_lib/cache_dir.py``; ``$TBFLOW_HISTORY`` names
another file). SQLite gives what two
tbflow runs at once need without hand-written locking: each record is one transaction (a reader
never sees half a write), writers wait for each other (``busy_timeout``), and WAL mode lets readers
go on while one writes. History only orders the queue, so any failure to read or write it is
swallowed: a job never fails, or changes a verdict, because of it.

A duration is the trial's own run time (agent, verifier and tbflow's work around them): time
spent building the image inside the trial is left out, because the next trial of the task will
find the image built. Only trials whose agent ran are kept: a trial that failed before that says
nothing about how long the task takes.
"""

from __future__ import annotations

import os
import sqlite3
import statistics
from contextlib import closing
from pathlib import Path

from tasks_lib.cache_dir import cache_dir
from tasks_lib.records.record_models import TrialRecord

HISTORY_FILE = "trial-history.sqlite"
#: how many of the latest durations of a task and harness the estimate looks at (their median)
RECENT = 5
_SCHEMA = """CREATE TABLE IF NOT EXISTS trial_duration (
    task TEXT NOT NULL, harness TEXT NOT NULL, run_sec REAL NOT NULL,
    job_id TEXT NOT NULL, trial_id TEXT NOT NULL, ended_at TEXT NOT NULL,
    PRIMARY KEY (job_id, trial_id, ended_at))"""


def history_path() -> Path:
    """``$TBFLOW_HISTORY`` when set (tests keep their own), else
    ``trial-history.sqlite`` in tbflow's cache dir."""
    if own := os.environ.get("TBFLOW_HISTORY"):
        return Path(own)
    return cache_dir() / HISTORY_FILE


def _connect(path: Path) -> sqlite3.Connection:
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, timeout=10)
    conn.execute("PRAGMA busy_timeout = 10000")
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(_SCHEMA)
    return conn


def run_seconds(record: TrialRecord) -> float | None:
    """The trial's duration without its own image build; None when the agent never ran."""
    if record.agent is None:
        return None
    build = record.image.duration_sec if record.image and record.image.source == "built" and not record.image.ahead \
        else 0.0
    return max(0.0, record.duration_sec - build)


def remember(record: TrialRecord, path: Path | None = None) -> None:
    """Add a finished trial's duration to the history (best effort: errors are ignored)."""
    run_sec = run_seconds(record)
    if run_sec is None:
        return
    try:
        with closing(_connect(path or history_path())) as conn, conn:
            conn.execute("INSERT OR REPLACE INTO trial_duration VALUES (?, ?, ?, ?, ?, ?)",
                         (record.spec.task_name, record.spec.harness, round(run_sec, 3), record.spec.job_id,
                          record.trial_id, record.ended_at.isoformat()))
    except (sqlite3.Error, OSError):
        pass


def expected_from_history(pairs: set[tuple[str, str]], path: Path | None = None) -> dict[tuple[str, str], float]:
    """Median of the latest ``RECENT`` durations for each (task, harness) that has any."""
    path = path or history_path()
    if not path.is_file():
        return {}
    out: dict[tuple[str, str], float] = {}
    try:
        with closing(_connect(path)) as conn:
            for task, harness in sorted(pairs):
                rows = conn.execute("SELECT run_sec FROM trial_duration WHERE task = ? AND harness = ? "
                                    "ORDER BY ended_at DESC LIMIT ?", (task, harness, RECENT)).fetchall()
                if rows:
                    out[(task, harness)] = statistics.median(r[0] for r in rows)
    except (sqlite3.Error, OSError):
        return {}
    return out
