"""``tbflow``: the command line for local runs.

It builds a ``JobConfig`` from flags (so bad values exit 2 naming the flag, before anything is
written), runs the job flow in Prefect's embedded local mode (no server to start), shows progress,
and prints the per-trial table and the summary.
"""

from __future__ import annotations

import os
import sys
from typing import List, Optional

import typer

from flows.embedded_prefect import configure_embedded_prefect

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Run Terminal-Bench 2.x tasks on Docker; every trial ends scored or invalid with a reason.")

_FLAG = {"dataset": "DATASET", "harnesses": "--harness", "concurrency": "--concurrency", "attempts": "--attempts",
         "include": "--include", "exclude": "--exclude", "n_tasks": "--n-tasks", "jobs_dir": "--jobs-dir",
         "job_name": "--job-name", "model": "--model"}


@app.callback()
def _root() -> None:
    """Run Terminal-Bench 2.x tasks on Docker; every trial ends scored or invalid with a reason."""


def fail(where: str, message: str, code: int = 2) -> None:
    typer.echo(f"tbflow: error: {where}: {message}", err=True)
    raise typer.Exit(code)


@app.command()
def run(
    dataset: str = typer.Argument(..., help="A task directory, or a directory of task directories."),
    harness: List[str] = typer.Option(["oracle"], "--harness", "-a", help="Harness to run (repeatable): oracle, nop."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="PROVIDER/MODEL for model harnesses."),
    concurrency: int = typer.Option(1, "--concurrency", "-n", min=1, max=64, help="Trials running at once."),
    attempts: int = typer.Option(1, "--attempts", "-k", min=1, max=100, help="Trials per task and harness."),
    include: List[str] = typer.Option([], "--include", help="Only tasks whose name matches this glob (repeatable)."),
    exclude: List[str] = typer.Option([], "--exclude", help="Skip tasks whose name matches this glob (repeatable)."),
    n_tasks: Optional[int] = typer.Option(None, "--n-tasks", min=1, help="Run only the first N tasks (by name)."),
    jobs_dir: str = typer.Option("jobs", "--jobs-dir", help="Where job directories are written."),
    job_name: Optional[str] = typer.Option(None, "--job-name",
                                           help="Job directory name (default: a timestamp). An existing job "
                                                "with this name is continued: recorded trials are kept."),
) -> None:
    """Run every task with each harness and record each trial as scored or invalid."""
    from pydantic import ValidationError

    from flows.job_config import JobConfig

    try:
        config = JobConfig(dataset=dataset, harnesses=harness, model=model, concurrency=concurrency,
                           attempts=attempts, include=include, exclude=exclude, n_tasks=n_tasks,
                           jobs_dir=jobs_dir, job_name=job_name)
    except ValidationError as exc:
        err = exc.errors()[0]
        fail(_FLAG.get(str(err["loc"][0]), str(err["loc"][0])), err["msg"].removeprefix("Value error, "))
    _run_job(config)


def _run_job(config) -> None:
    from flows.console import RichProgress, print_results
    from flows import progress
    from tasks_lib.errors import DockerUnavailableError, InputError

    configure_embedded_prefect()
    from flows.job_flow import job_flow, plan

    from tasks_lib.docker_client import preflight

    try:  # fail fast on bad input and a missing engine, before Prefect starts
        plan(config)
        preflight()
    except InputError as exc:
        fail(exc.where, exc.message)
    except DockerUnavailableError as exc:
        fail("docker", str(exc))
    listener = RichProgress()
    progress.set_listener(listener)
    try:
        result = job_flow(config=config)
    except InputError as exc:
        fail(exc.where, exc.message)
    except DockerUnavailableError as exc:
        fail("docker", str(exc))
    except KeyboardInterrupt:
        listener.job_finished()
        typer.echo("tbflow: interrupted; unfinished trials were not recorded and will run on resume.", err=True)
        raise typer.Exit(130)
    finally:
        progress.set_listener(None)
    print_results(result)


def main() -> None:
    try:
        from flows.report_cli import register
    except ImportError:  # the report commands ship in their own module
        register = None
    if register is not None:
        register(app)
    app(prog_name="tbflow")


if __name__ == "__main__":
    main()
