"""``tbflow regrade SOURCE_JOB [DATASET]``: judge a finished job's trials again, no agent run.

Terminal-Bench's minor versions change only the verifier; their jobs are regraded, not rerun. The
new job has the source's trial ids, harnesses and model; each trial of a task with a separate
verifier whose artifacts were recorded gets the dataset's current verifier in a fresh container fed
with those artifacts, and its agent phase (logs, exchange, trajectory, cost) copied from the
source; every other trial is listed with why it cannot be regraded. The source job is only read.

No ``from __future__ import annotations`` here: Typer reads the annotations at runtime.
"""

from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Optional

import typer

#: starts a job from JobConfig fields, as ``tbflow run`` does (set by ``register``: main owns it)
_start: list[Callable[[dict], None]] = []


def regrade(
    source: Path = typer.Argument(..., metavar="SOURCE_JOB", help="The finished job directory to regrade."),
    dataset: Optional[str] = typer.Argument(None, metavar="DATASET",
                                            help="The tasks with their new verifiers (default: the source's dataset)."),
    jobs_dir: Optional[str] = typer.Option(None, "--jobs-dir", metavar="DIR",
                                           help="Where the regrade job is written (default: beside the source)."),
    job_name: Optional[str] = typer.Option(None, "--job-name", metavar="NAME",
                                           help="The regrade job's name (default: SOURCE-regrade-<UTC time>); an "
                                                "existing regrade job of this name is continued."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", "-n", min=1, max=64, metavar="N",
                                              help="Trials running at once (default: as recorded)."),
) -> None:
    """Regrade a job: its trials judged by the dataset's current verifier from their recorded artifacts."""
    from tasks_lib.errors import InputError
    from tasks_lib.store.job_store import JobStore

    local = source.resolve()
    try:
        record = JobStore(local).read_job()
    except InputError as exc:
        typer.echo(f"tbflow: error: SOURCE_JOB: {exc.where}: {exc.message}", err=True)
        raise typer.Exit(2) from None
    cfg = dict(record.config)
    for key in ("key_secrets", "prices", "rerun_invalid", "job_name", "regrade_from"):
        cfg.pop(key, None)
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d__%H-%M-%S")
    cfg.update(dataset=dataset or (record.dataset if record.dataset_source is not None else cfg["dataset"]),
               regrade_from=str(local), jobs_dir=jobs_dir or str(local.parent), shards=0, force_new=False,
               job_name=job_name or f"{local.name}-regrade-{stamp}"[:128])
    if concurrency is not None:
        cfg["concurrency"] = concurrency
    _start[0](cfg)


def register(app: typer.Typer, start: Callable[[dict], None]) -> None:
    """Add ``regrade`` to ``app``; ``start`` runs a job from its config's fields (``tbflow run``'s way)."""
    _start[:] = [start]
    app.command("regrade")(regrade)
