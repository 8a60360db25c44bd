"""``tbflow export JOB --format harbor --to DIR``: a job as a Harbor job directory.

For publishing (the Terminal-Bench leaderboard takes Harbor job directories) and for browsing a
job in Harbor's viewer (``harbor view DIR``). The export is written even when the job breaks a
leaderboard rule; each broken rule is printed (stderr) so the user knows before submitting.
Exit codes: 0 written; 2 bad input (not a job, an unwritable or occupied --to), one line naming it.

No ``from __future__ import annotations`` here: Typer reads the annotations at runtime.
"""

from enum import Enum
from pathlib import Path

import typer

from tasks_lib.errors import InputError
from tasks_lib.publish.harbor_export import ExportSummary, export_harbor
from tasks_lib.store.store_jobs import open_job
from tasks_lib.text_clean import visible


class ExportFormat(str, Enum):
    harbor = "harbor"


def summary_lines(summary: ExportSummary) -> list[str]:
    """What the terminal shows: what was written, then each leaderboard rule the job breaks."""
    lines = [f"wrote {visible(summary.job_dir)}: {summary.trials} trials ({summary.exceptions} as exceptions: "
             f"invalid or a tbflow error, never reward 0), {summary.trajectories} trajectories"]
    if summary.rule_breaks:
        lines.append(f"not accepted by the Terminal-Bench leaderboard as it is ({len(summary.rule_breaks)} rule(s)):")
        lines += [f"  - {b.rule}: {visible(b.detail)}" for b in summary.rule_breaks]
    else:
        lines.append("meets the leaderboard rules tbflow can check; fill in metadata.yaml before submitting")
    return lines


def export(
    job_ref: str = typer.Argument(..., metavar="JOB", show_default=False, help=(
        "The job directory (holds job.json), or a job in a store (s3://BUCKET/PREFIX/NAME).")),
    format: ExportFormat = typer.Option(..., "--format", "-f", help="harbor: a Harbor 0.26 job directory."),
    to: Path = typer.Option(..., "--to", help="Where to write: DIR/metadata.yaml and DIR/<job name>/ (a jobs "
                                               "dir for `harbor view DIR`, a leaderboard submission folder).",
                            show_default=False),
) -> None:
    """Export a job for publishing: a Harbor job directory (invalid trials as exceptions)."""
    try:
        job = open_job(job_ref, "JOB")
        if job.warning:
            typer.echo(f"tbflow: warning: {job.warning}", err=True)
        if job.mirror is not None:  # a job in a store: its logs and trajectories are there, not here
            job.mirror.pull_trial_files()
        if to.exists() and not to.is_dir():
            raise InputError("--to", f"{to} exists and is not a directory")
        try:
            summary = export_harbor(job.path, to)
        except OSError as exc:
            raise InputError("--to", f"cannot write {to}: {exc.strerror or exc}") from None
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    lines = summary_lines(summary)
    typer.echo(lines[0])
    for line in lines[1:]:
        typer.echo(line, err=True)


def register(app: typer.Typer) -> None:
    """Add ``export`` to ``app``."""
    app.command("export")(export)
