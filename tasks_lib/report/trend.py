"""The cross-night view of a templated job (``nightly-{date}``): mean reward per harness per night.

Each night is its own job (``tasks_lib/job/job_name_template.py``), so one job's report cannot say
whether last night was worse than the week before. The trend reads the ``results.json`` of the
last nights of the same template in the same jobs dir and shows, per night and harness, the mean
reward with its 95% interval. The numbers are the ones each night's own report shows (its
``HarnessSummary``, computed by ``tasks_lib/report/stats.py``: Wilson for 0/1 rewards, t for
fractional ones, clustered by task), so the trend and the reports never disagree. Invalid trials
are counted beside the mean, never averaged in as zeros (docs/reports.md).

A night without ``results.json`` (a job that never reached its report) is left out and named.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from tasks_lib.job.job_name_template import night_of
from tasks_lib.report.md_format import code, num
from tasks_lib.report.report_files import RESULTS_JSON
from tasks_lib.report.results_model import Interval, Results

#: how many nights the trend shows (the newest ones)
TREND_NIGHTS = 14


class NightHarness(BaseModel):
    harness: str
    trials: int
    scored: int
    invalid: int
    mean_reward: float | None = Field(description="Mean over scored trials; None when none was scored.")
    interval: Interval | None = None


class Night(BaseModel):
    job_name: str
    night: datetime = Field(description="The scheduled start the job name was rendered from (UTC).")
    harnesses: list[NightHarness]


class Trend(BaseModel):
    template: str
    nights: list[Night] = Field(description="Oldest first.")
    harnesses: list[str] = Field(description="Every harness of any night, in first-seen order.")
    unreadable: list[str] = Field(default_factory=list, description="Jobs of the template without results.")


def find_nights(jobs_dir: Path, template: str) -> list[tuple[datetime, Path]]:
    """Job directories under ``jobs_dir`` whose name ``template`` renders, oldest night first."""
    found = []
    for d in Path(jobs_dir).iterdir() if Path(jobs_dir).is_dir() else []:
        when = night_of(template, d.name)
        if when is not None and d.is_dir():
            found.append((when, d))
    return sorted(found)


def read_results(job_dir: Path) -> Results | None:
    """The job's ``results.json``, or None when it has none (or an unreadable one)."""
    try:
        return Results.model_validate_json((job_dir / RESULTS_JSON).read_text(encoding="utf-8"))
    except (OSError, ValidationError, ValueError):
        return None


def night_row(when: datetime, results: Results) -> Night:
    return Night(job_name=results.job.job_name, night=when, harnesses=[
        NightHarness(harness=s.harness, trials=s.trials, scored=s.scored, invalid=s.invalid,
                     mean_reward=s.mean_reward, interval=s.reward_interval) for s in results.summaries])


def trend_of(template: str, nights: list[tuple[datetime, Results | None, str]],
             last: int = TREND_NIGHTS) -> Trend:
    """The trend over the newest ``last`` nights of ``(night, results or None, job name)``."""
    rows, unreadable = [], []
    for when, results, name in sorted(nights, key=lambda n: n[0]):
        if results is None:
            unreadable.append(name)
        else:
            rows.append(night_row(when, results))
    rows = rows[-last:] if last > 0 else rows
    harnesses: list[str] = []
    for row in rows:
        harnesses += [h.harness for h in row.harnesses if h.harness not in harnesses]
    return Trend(template=template, nights=rows, harnesses=harnesses, unreadable=unreadable)


def cell(h: NightHarness | None) -> str:
    """One night of one harness: mean [low, high] (scored/trials), invalid beside it."""
    if h is None:
        return "—"
    if h.mean_reward is None:
        return f"no scored trial ({h.invalid} invalid)"
    text = num(h.mean_reward, 3)
    if h.interval is not None:
        text += f" [{num(h.interval.low, 2)}, {num(h.interval.high, 2)}]"
    text += f" ({h.scored} scored"
    return text + (f", ⚠️ {h.invalid} invalid)" if h.invalid else ")")


def render_trend(trend: Trend) -> str:
    """Markdown: one row per night (oldest first), one column per harness."""
    lines = [f"# Trend of {code(trend.template)}: last {len(trend.nights)} night(s)", "",
             "Mean reward per harness, with its 95% interval (as in each night's report); invalid "
             "trials are counted beside it, never averaged in.", ""]
    if not trend.nights:
        return "\n".join(lines + ["No night has results yet.", ""])
    lines.append("| Night (UTC) | Job | " + " | ".join(code(h) for h in trend.harnesses) + " |")
    lines.append("|---|---|" + "---|" * len(trend.harnesses))
    for row in trend.nights:
        by = {h.harness: h for h in row.harnesses}
        cells = " | ".join(cell(by.get(h)) for h in trend.harnesses)
        when = f"{row.night:%Y-%m-%d}" if "{datetime}" not in trend.template else f"{row.night:%Y-%m-%d %H:%M}"
        lines.append(f"| {when} | {code(row.job_name)} | {cells} |")
    if trend.unreadable:
        lines += ["", "Left out (no results.json: the job never reached its report): "
                  + ", ".join(code(n) for n in trend.unreadable)]
    return "\n".join(lines) + "\n"
