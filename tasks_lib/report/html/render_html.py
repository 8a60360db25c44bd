"""Render ``report.html`` and one page per trial under ``report-trials/`` (reproducible bytes).

Why a page per trial instead of one big document: a 445-trial job with long transcripts would be
a page of hundreds of MB that every viewer chokes on (Inspect's viewer took 45 s on a 127 MB
sample). ``report.html`` holds the summary and the trial table (about 1 KB per trial); a trial's
verdict, verifier output and trajectory are on its own page, loaded only when opened. Plain
links, not ``fetch()``: Chromium blocks ``fetch`` of ``file://``, and the report must open from
disk and as a CI artifact. Nothing is loaded from the network: CSS and JS are inline.

Escaping: every text from a record or a trial file passes ``visible`` (control characters and
bidi marks as escapes) and then jinja2's HTML autoescape, so ``<script>`` or ``ESC]52`` in an
agent's output shows as written. No timestamp of the rendering: same inputs, same bytes.
"""

from __future__ import annotations

import hashlib
import re
from functools import lru_cache
from pathlib import Path

import jinja2

from tasks_lib.report.html.trial_inputs import TrialInputs, trial_inputs
from tasks_lib.report.md_format import num, seconds, when
from tasks_lib.report.templating import bytecode_cache
from tasks_lib.report.render_markdown import cost, count, tokens
from tasks_lib.report.results_model import Results, TrialResult
from tasks_lib.text_clean import visible

REPORT_HTML = "report.html"
TRIAL_PAGES = "report-trials"
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")


def trial_page_name(trial_id: str) -> str:
    """A file name for a trial's page: its id when that is a safe name, else a cleaned id + hash."""
    safe = _UNSAFE.sub("_", trial_id)[:120]
    if safe != trial_id:
        safe += "-" + hashlib.sha256(trial_id.encode()).hexdigest()[:8]
    return f"{safe}.html"


def status_of(trial: TrialResult) -> str:
    """passed / failed (scored), invalid, or error (a tbflow bug): the table's status filter."""
    v = trial.record.validity
    if v.status == "scored":
        return "passed" if (v.reward or 0) >= 1 else "failed"
    return v.status


def _v(value: object, multiline: bool = False) -> str:
    return visible("" if value is None else str(value), multiline=multiline)


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    env = jinja2.Environment(loader=jinja2.PackageLoader("tasks_lib.report", "templates"),
                             autoescape=True, undefined=jinja2.StrictUndefined, bytecode_cache=bytecode_cache(),
                             trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=True)
    env.filters.update({"v": _v, "vl": lambda x: _v(x, True), "num": num, "seconds": seconds, "when": when,
                        "status": status_of, "page": trial_page_name})
    env.globals.update({"tokens": tokens, "cost": cost, "count": count})
    return env


def render_index(results: Results) -> str:
    trials = results.trials
    options = {
        "harness": sorted({t.record.spec.harness for t in trials}),
        "kind": sorted({t.record.validity.kind for t in trials if t.record.validity.kind}),
        "flag": sorted({f.kind for t in trials for f in t.record.flags}),
    }
    return _environment().get_template("report.html.j2").render(r=results, options=options, pages=TRIAL_PAGES)


def render_trial(results: Results, trial: TrialResult, inputs: TrialInputs) -> str:
    return _environment().get_template("trial.html.j2").render(r=results, t=trial, i=inputs)


def html_files(results: Results, job_dir: Path | None) -> dict[str, str]:
    """Every file of the HTML report, by path relative to the job directory."""
    files = {REPORT_HTML: render_index(results)}
    for trial in results.trials:
        inputs = (trial_inputs(job_dir, trial) if job_dir is not None
                  else TrialInputs(trajectory_path=f"{trial.trial_dir}/trajectory.json"))
        files[f"{TRIAL_PAGES}/{trial_page_name(trial.record.trial_id)}"] = render_trial(results, trial, inputs)
    return files
