"""Render a ``JobDiff`` as Markdown (``tasks_lib/report/templates/diff.md.j2``)."""

from __future__ import annotations

from functools import lru_cache

import jinja2

from tasks_lib.report.job_diff import JobDiff, SideTask, TaskComparison
from tasks_lib.report.md_format import num
from tasks_lib.report.templating import make_environment, render

FOLD_OVER = 20
_ICON = {"pass": "✅", "fail": "❌", "mixed": "◐", "invalid": "⚠️", "absent": "—"}


def side(s: SideTask) -> str:
    """One side of one task: status, mean over scored attempts, counts, invalid beside them."""
    if s.status == "absent":
        return "— absent"
    if s.status == "invalid":
        return f"⚠️ only invalid ({s.invalid})"
    text = f"{_ICON[s.status]} {num(s.mean_reward, 2)} ({s.passed}/{s.scored} passed"
    return text + (f", ⚠️ {s.invalid} invalid)" if s.invalid else ")")


def why(t: TaskComparison) -> str:
    """Why a task is scored on one side only."""
    other, name = (t.b, "B") if t.outcome == "a_only" else (t.a, "A")
    if other.status == "absent":
        return f"not in job {name}"
    return f"only invalid in {name} ({other.invalid})"


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return make_environment({"side": side, "why": why})


def render_diff(diff: JobDiff, collapsible: bool = True) -> str:
    return render(_environment(), "diff.md.j2", d=diff, fold=lambda n: collapsible and n > FOLD_OVER)
