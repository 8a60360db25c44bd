"""What one trial page shows beyond its record, read from the trial directory (the I/O edge).

The trajectory (``trials/<trial>/trajectory.json``, written by tbflow on the host), the verifier's
CTRF test cases (``verifier/ctrf.json``, when the tests wrote one) and the verifier output's last
lines. Each read is bounded: a file larger than its cap is left out with a note, never loaded.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tasks_lib.report.html.trajectory_view import TrajectoryView, trajectory_view
from tasks_lib.report.report_inputs import log_tail
from tasks_lib.report.results_model import TrialResult

TRAJECTORY_FILE = "trajectory.json"
CTRF_FILE = "verifier/ctrf.json"
MAX_TRAJECTORY_BYTES = 256 * 1024 * 1024
MAX_CTRF_BYTES = 16 * 1024 * 1024
VERIFIER_LINES = 200
MAX_CTRF_TESTS = 500


class CtrfTest(BaseModel):
    name: str
    status: str
    message: str = ""


class TrialInputs(BaseModel):
    trajectory: TrajectoryView | None = None
    trajectory_path: str
    ctrf: list[CtrfTest] | None = None
    ctrf_more: int = 0
    verifier_lines: list[str] = []


def _read(path: Path, cap: int) -> str | None:
    """The file's text; None when absent or a symlink; a marker when it exceeds ``cap``."""
    try:
        if path.is_symlink() or not path.is_file():
            return None
        if path.stat().st_size > cap:
            return json.dumps({"tbflow_too_large": path.stat().st_size})
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None


def ctrf_tests(text: str | None) -> tuple[list[CtrfTest] | None, int]:
    """CTRF's ``results.tests`` (name, status, message); None when absent or not CTRF."""
    if text is None:
        return None, 0
    try:
        data: Any = json.loads(text)
        tests = data["results"]["tests"]
    except (ValueError, KeyError, TypeError):
        return None, 0
    if not isinstance(tests, list):
        return None, 0
    out = [CtrfTest(name=str(t.get("name", "?")), status=str(t.get("status", "?")),
                    message=str(t.get("message") or t.get("trace") or "")[:2000])
           for t in tests[:MAX_CTRF_TESTS] if isinstance(t, dict)]
    return out, max(0, len(tests) - MAX_CTRF_TESTS)


def trial_inputs(job_dir: Path, trial: TrialResult) -> TrialInputs:
    tdir = Path(job_dir) / trial.trial_dir
    raw = _read(tdir / TRAJECTORY_FILE, MAX_TRAJECTORY_BYTES)
    view = trajectory_view(raw)
    if raw is not None and '"tbflow_too_large"' in raw[:40]:
        view = TrajectoryView(problem=f"trajectory.json is larger than {MAX_TRAJECTORY_BYTES >> 20} MiB; not shown")
    ctrf, more = ctrf_tests(_read(tdir / CTRF_FILE, MAX_CTRF_BYTES))
    return TrialInputs(trajectory=view, trajectory_path=f"{trial.trial_dir}/{TRAJECTORY_FILE}", ctrf=ctrf,
                       ctrf_more=more, verifier_lines=log_tail(job_dir, trial.verifier_log, VERIFIER_LINES))
