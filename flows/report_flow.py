"""The report flow: the last step of every job.

It writes ``report.md``, ``junit.xml`` and ``results.json`` into the job directory (through
``write_reports``, which the CLI also uses without Prefect) and publishes two artifacts on the
flow run, so the Prefect UI shows the results where the run is: the Markdown report (rendered
without ``<details>``, which the UI's renderer cannot fold) and a per-trial table.

The files are the product; the artifacts are a view of them. A failure to publish an artifact
(e.g. the API hiccups at the end of a long job) is logged as a warning and does not fail a job
whose trials and files are all fine.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from prefect import flow, get_run_logger
from prefect.artifacts import create_markdown_artifact, create_table_artifact

from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.report_files import ReportPaths, write_reports
from tasks_lib.report.results_model import Results
from tasks_lib.text_clean import shorten, visible

__all__ = ["ReportPaths", "artifact_key", "report_flow", "trial_table", "write_reports"]


def artifact_key(job_name: str, suffix: str) -> str:
    """A Prefect artifact key (``^[a-z0-9-]*$``) from the job name, e.g. ``run-1-2-report``."""
    slug = re.sub(r"[^a-z0-9]+", "-", job_name.lower()).strip("-") or "job"
    return f"{slug}-{suffix}"


def trial_table(results: Results) -> list[dict[str, Any]]:
    """One row per trial for the table artifact."""
    rows = []
    for t in results.trials:
        r, v = t.record, t.record.validity
        rows.append({
            "harness": r.spec.harness,
            "task": r.spec.task_name,
            "attempt": r.spec.attempt,
            "status": f"invalid: {v.kind}" if v.status == "invalid" else v.status,
            "reward": v.reward if v.status == "scored" else None,
            "reason": shorten(visible(v.reason or ""), 200),  # a bidi override acts in a browser too
            "seconds": round(r.duration_sec, 1),
            "log": t.evidence_path or t.verifier_log or t.trial_dir,
        })
    return rows


@flow(name="report")
def report_flow(job_dir: str) -> dict[str, Any]:
    """Render and write the job's reports, then publish them as artifacts of this flow run."""
    logger = get_run_logger()
    paths = write_reports(Path(job_dir))
    results = paths.results
    logger.info("wrote %s, %s and %s", paths.markdown, paths.junit, paths.results_json)
    name = results.job.job_name
    try:
        create_markdown_artifact(key=artifact_key(name, "report"), markdown=render_markdown(results, collapsible=False),
                                 description=f"tbflow report of job {name}")
        create_table_artifact(key=artifact_key(name, "trials"), table=trial_table(results),
                              description=f"Every trial of job {name}")
    except Exception as exc:  # the files are written; a missing view must not fail the job
        logger.warning("could not publish the report artifacts: %s", exc)
    return {
        "report_md": str(paths.markdown),
        "junit_xml": str(paths.junit),
        "results_json": str(paths.results_json),
        "trials": results.total_trials,
        "scored": results.total_scored,
        "invalid": results.total_invalid,
        "errors": results.total_errors,
        "summaries": [{"harness": s.harness, "trials": s.trials, "scored": s.scored, "invalid": s.invalid,
                       "mean_reward": s.mean_reward} for s in results.summaries],
    }
