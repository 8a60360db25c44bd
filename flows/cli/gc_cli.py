"""``tbflow gc``: orphan containers of crashed runs, and with ``--keep-jobs``/``--older-than`` old
finished job directories (``tasks_lib/store/retention.py``; docs/deployments.md, "Nightly runs")."""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer


def _fail(where: str, message: str) -> None:
    """As ``flows/cli/main.fail``: one line naming the flag, exit 2."""
    typer.echo(f"tbflow: error: {where}: {message}", err=True)
    raise typer.Exit(2)


def gc(
    jobs_dir: Optional[str] = typer.Option(None, "--jobs-dir", help=(
        "Only jobs under this directory, or under this store URL (s3://BUCKET/PREFIX: this machine's working "
        "copies of its jobs). Default: every job.")),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed."),
    keep_jobs: Optional[int] = typer.Option(None, "--keep-jobs", min=0, help=(
        "Also remove finished job directories under --jobs-dir that match --match, all but the newest N "
        "(never an unfinished job, never one a live run holds; only what tbflow wrote, no link followed).")),
    older_than: Optional[str] = typer.Option(None, "--older-than", metavar="AGE", help=(
        "Also remove finished matching job directories that ended more than AGE ago (14d, 36h, 90m); "
        "with --keep-jobs, only those both limits remove.")),
    match: str = typer.Option("*", "--match", metavar="GLOB", help="Job directory names --keep-jobs and "
                                                                   "--older-than apply to (e.g. 'nightly-*')."),
) -> None:
    """Remove trial containers left by crashed runs of every job on this Docker engine; never those of a running job.

    With --keep-jobs or --older-than, first remove old finished job directories (docs/deployments.md).
    """
    from tasks_lib.container.docker_client import preflight
    from tasks_lib.errors import DockerUnavailableError, InputError
    from tasks_lib.job.job_orphans import collect_garbage

    if keep_jobs is not None or older_than is not None:
        from tasks_lib.store.retention import apply_retention

        try:
            apply_retention(jobs_dir, match, keep_jobs, older_than, dry_run, typer.echo)
        except InputError as exc:
            _fail(exc.where, exc.message)
    try:
        preflight()
    except DockerUnavailableError as exc:
        _fail("docker", str(exc))
    from tasks_lib.store.remote_store import is_url, working_root

    under = None if jobs_dir is None else working_root(jobs_dir) if is_url(jobs_dir) else Path(jobs_dir)
    report = collect_garbage(under, dry_run)
    verb = "would remove" if dry_run else "removed"
    for job_dir, names in report.removed.items():
        typer.echo(f"{verb} {len(names)} container(s) of {job_dir}: {', '.join(names)}")
    for job_dir, who in report.live.items():
        typer.echo(f"kept {job_dir}: {who}")
    for job_dir, why in report.left_alone.items():
        typer.echo(f"left alone {job_dir}: {why}")
    n = sum(len(v) for v in report.removed.values())
    typer.echo(f"{verb} {n} orphan container(s); {len(report.live)} running job(s) untouched")


def register(app: typer.Typer) -> None:
    app.command(name="gc")(gc)
