"""Write a job's report files, without Prefect.

Kept apart from the report flow so ``tbflow report`` can re-render an archived or copied job
directory from its records alone, quickly, without importing Prefect or reaching a server.
Each file is written atomically, ``results.json`` first: it is the source the others are
rendered from, so a reader never sees a Markdown or JUnit file newer than the data behind it.
``report.html`` and its per-trial pages (``report-trials/``) come last; a page of a trial that is
no longer in the job (a re-rendered, pruned copy) is removed. Rendering is deterministic (no
timestamps of its own), so re-rendering an unchanged job gives byte-identical files.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tasks_lib.errors import InputError
from tasks_lib.store.job_store import write_atomic
from tasks_lib.store.remote_store import mirror_for
from tasks_lib.report.html.render_html import REPORT_HTML, TRIAL_PAGES, html_files
from tasks_lib.report.render_junit import render_junit
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_model import Results
from tasks_lib.report.results_build import load_results

REPORT_MD = "report.md"
JUNIT_XML = "junit.xml"
RESULTS_JSON = "results.json"


@dataclass(frozen=True)
class ReportPaths:
    """Where the files went, and the ``Results`` they were rendered from."""

    markdown: Path
    junit: Path
    results_json: Path
    results: Results
    html: Path | None = None


def render_results_json(results: Results) -> str:
    return results.model_dump_json(indent=2) + "\n"


def write_reports(job_dir: Path, results: Results | None = None) -> ReportPaths:
    """Render ``results.json``, ``report.md``, ``junit.xml`` and ``report.html`` into ``job_dir``.

    ``InputError`` when the directory is not a job directory or cannot be written.
    """
    job_dir = Path(job_dir)
    if results is None:
        results = load_results(job_dir)
    paths = ReportPaths(job_dir / REPORT_MD, job_dir / JUNIT_XML, job_dir / RESULTS_JSON, results,
                        job_dir / REPORT_HTML)
    try:
        write_atomic(paths.results_json, render_results_json(results))
        write_atomic(paths.markdown, render_markdown(results))
        write_atomic(paths.junit, render_junit(results))
        write_html(job_dir, results)
    except OSError as exc:
        raise InputError(str(job_dir), f"cannot write the report files: {exc.strerror or exc}") from exc
    if (mirror := mirror_for(job_dir)) is not None:  # a job in a store: the reports go there too
        mirror.push_top()
    return paths


def write_html(job_dir: Path, results: Results) -> None:
    """``report.html`` and ``report-trials/*.html``; stale trial pages of earlier renders removed."""
    files = html_files(results, job_dir)
    for rel, text in sorted(files.items(), key=lambda kv: kv[0] == REPORT_HTML):  # the index last
        write_atomic(job_dir / rel, text)
    pages = job_dir / TRIAL_PAGES
    for old in pages.glob("*.html") if pages.is_dir() else ():
        if f"{TRIAL_PAGES}/{old.name}" not in files and not old.is_symlink():
            old.unlink()
