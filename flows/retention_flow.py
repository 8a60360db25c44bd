"""The retention flow: ``tbflow gc``'s job-directory rule, on a schedule (deployment ``nightly-retention``).

A nightly deployment adds a job directory a night; this flow, deployed next to it
(deployments/prefect.yaml), removes the old finished ones by the rule of
``tasks_lib/store/retention.py`` (never an unfinished job, never one a live run holds). It runs on a
worker of the same pool, so ``jobs_dir`` is the path the job runs wrote to. Each removed or kept
job is one log line, and a Markdown artifact ``<match stem>-retention`` lists them.
"""

from __future__ import annotations

import re
from typing import Annotated, Optional

from prefect import flow, get_run_logger
from pydantic import Field

from flows.report_flow import artifact_key
from flows.job.run_ui import refused
from tasks_lib.errors import InputError
from tasks_lib.store.retention import apply_retention


@flow(name="tbflow-retention")
def retention_flow(
    jobs_dir: Annotated[str, Field(min_length=1)] = "jobs",
    match: Annotated[str, Field(min_length=1)] = "nightly-*",
    keep_jobs: Annotated[Optional[int], Field(ge=0)] = 14,
    older_than: Optional[str] = None,
    dry_run: bool = False,
):
    """Remove old finished job directories of ``jobs_dir`` whose names match ``match``.

    Args:
        jobs_dir: The jobs dir the job runs write to (a local or shared path on the worker).
        match: Glob of the job names the rule applies to, e.g. nightly-*.
        keep_jobs: Keep the newest N finished matching jobs (None: no count limit).
        older_than: Remove finished matching jobs that ended longer ago than this (14d, 36h, 90m); with keep_jobs, only
            jobs both limits remove go.
        dry_run: Only list what would be removed.
    """
    logger = get_run_logger()
    lines: list[str] = []

    def echo(line: str) -> None:
        lines.append(line)
        logger.info("%s", line)

    try:
        n = apply_retention(jobs_dir, match, keep_jobs, older_than, dry_run, echo)
    except InputError as exc:
        where = {"--jobs-dir": "jobs_dir", "--older-than": "older_than",
                 "--keep-jobs/--older-than": "keep_jobs/older_than"}.get(exc.where, exc.where)
        return refused(logger, exc, f"parameter {where}: {exc.message}")
    stem = re.sub(r"[*?\[\]]+", "", match).strip("-_.") or "jobs"
    try:
        from prefect.artifacts import create_markdown_artifact

        create_markdown_artifact(key=artifact_key(stem, "retention"), markdown="\n".join(f"- {x}" for x in lines),
                                 description=f"Job directories removed from {jobs_dir}")
    except Exception as exc:  # noqa: BLE001 - the log has the same lines
        logger.warning("could not publish the retention artifact: %s", exc)
    return n
