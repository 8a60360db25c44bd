"""``tbflow``: the command line for local runs.

It builds a ``JobConfig`` from flags (so bad values exit 2 naming the flag, before anything is
written), plans the job without Prefect (bad input, a changed identity and a missing Docker engine
fail fast), runs the job flow in Prefect's embedded local mode (no server to start) with a
progress bar, and prints the per-trial table and the summary. A job whose trials are all recorded
is finished without starting Prefect or any container.

No ``from __future__ import annotations`` here: Typer reads the annotations at runtime.
"""

import signal
import uuid
from pathlib import Path
from typing import List, Optional

import typer

from flows.cli.cli_options import optional_value_command
from flows.embedded_prefect import configure_embedded_prefect

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Run Terminal-Bench 2.x tasks on Docker; every trial ends scored or invalid with a reason.")

_FLAG = {"dataset": "DATASET", "harnesses": "--harness", "concurrency": "--concurrency", "attempts": "--attempts",
         "include": "--include", "exclude": "--exclude", "n_tasks": "--n-tasks", "jobs_dir": "--jobs-dir",
         "job_name": "--job-name", "model": "--model", "timeout_multiplier": "--timeout-multiplier",
         "env_retries": "--env-retries", "rerun_invalid": "--rerun-invalid", "order": "--order",
         "order_seed": "--seed"}
RERUN_KINDS = ("all", "harness", "environment", "verifier")
ORDER_HELP = ("Start order of the trials: expected (longest expected duration first: the task's earlier run "
              "times on this machine, else its metadata estimate, else its agent timeout), name, or random.")
SEED_HELP = "Seed for --order random (default: a new one, recorded in job.json)."


@app.callback()
def _root() -> None:
    """Run Terminal-Bench 2.x tasks on Docker; every trial ends scored or invalid with a reason."""


def fail(where: str, message: str, code: int = 2) -> None:
    typer.echo(f"tbflow: error: {where}: {message}", err=True)
    raise typer.Exit(code)


def _config(**kw):
    from pydantic import ValidationError

    from flows.job_config import JobConfig

    try:
        return JobConfig(**kw)
    except ValidationError as exc:
        err = exc.errors()[0]
        fail(_FLAG.get(str(err["loc"][0]), str(err["loc"][0])), err["msg"].removeprefix("Value error, "))


@app.command()
def run(
    dataset: str = typer.Argument(..., help="A task directory, or a directory of task directories."),
    harness: List[str] = typer.Option(["oracle"], "--harness", "-a", help="Harness to run (repeatable): oracle, nop, codex, opencode, pi, claude-code."),
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
    timeout_multiplier: float = typer.Option(1.0, "--timeout-multiplier", min=0.01, max=100,
                                             help="Multiply every agent and verifier timeout (recorded in the job)."),
    env_retries: int = typer.Option(2, "--env-retries", min=0, max=10,
                                    help="Retries after an environment failure (build, container, Docker API)."),
    force_new: bool = typer.Option(False, "--force-new",
                                   help="If --job-name exists with another identity, start a new job directory."),
    order: str = typer.Option("expected", "--order", metavar="expected|name|random", help=ORDER_HELP),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, help=SEED_HELP),
) -> None:
    """Run every task with each harness and record each trial as scored or invalid."""
    _run_job(_config(dataset=dataset, harnesses=harness, model=model, concurrency=concurrency, attempts=attempts,
                     include=include, exclude=exclude, n_tasks=n_tasks, jobs_dir=jobs_dir, job_name=job_name,
                     timeout_multiplier=timeout_multiplier, env_retries=env_retries, force_new=force_new,
                     order=order, order_seed=seed))


@app.command(cls=optional_value_command("--rerun-invalid", "all", lambda v: v in RERUN_KINDS))
def resume(
    job_dir: Path = typer.Argument(..., help="The job directory to continue (holds job.json)."),
    rerun_invalid: Optional[str] = typer.Option(
        None, "--rerun-invalid", metavar="[=KIND]",
        help="Also re-run recorded invalid trials: all, or one kind (harness, environment, verifier). "
             "Earlier tries are kept under attempts/."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", "-n", min=1, max=64,
                                              help="Trials running at once (default: as recorded)."),
    env_retries: Optional[int] = typer.Option(None, "--env-retries", min=0, max=10,
                                              help="Retries after an environment failure (default: as recorded)."),
    order: Optional[str] = typer.Option(None, "--order", metavar="expected|name|random",
                                        help=ORDER_HELP + " Default: as recorded."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, help=SEED_HELP),
) -> None:
    """Continue a job: keep recorded trials, run the missing (interrupted) ones."""
    from tasks_lib.errors import InputError
    from tasks_lib.job.job_store import JobStore

    if rerun_invalid is not None and rerun_invalid not in RERUN_KINDS:
        fail("--rerun-invalid", f"expected one of {', '.join(RERUN_KINDS)}, got {rerun_invalid!r}")
    try:
        record = JobStore(job_dir).read_job()
    except InputError as exc:
        fail(exc.where, exc.message)
    cfg = dict(record.config)
    cfg.update(jobs_dir=str(job_dir.resolve().parent), job_name=job_dir.resolve().name, force_new=False,
               rerun_invalid=rerun_invalid)
    if concurrency is not None:
        cfg["concurrency"] = concurrency
    if env_retries is not None:
        cfg["env_retries"] = env_retries
    if order is not None:
        cfg["order"] = order
        cfg["order_seed"] = seed
    elif seed is not None:
        cfg["order_seed"] = seed
    _run_job(_config(**cfg))


def _run_job(config) -> None:
    from flows.cli.console import RichProgress, print_results
    from flows.cli import progress
    from tasks_lib.container.docker_client import preflight
    from tasks_lib.errors import DockerUnavailableError, InputError

    configure_embedded_prefect()
    from flows.job_plan import plan

    try:  # fail fast on bad input, a changed identity and a missing engine, before Prefect starts
        planned = plan(config, uuid.uuid4().hex[:12])
        if not planned.todo and planned.previous is not None:
            _finish_recorded(planned)
            return
        preflight()
    except InputError as exc:
        fail(exc.where, exc.message)
    except DockerUnavailableError as exc:
        fail("docker", str(exc))
    from flows.job_flow import job_flow

    listener = RichProgress()
    progress.set_listener(listener)
    previous = signal.signal(signal.SIGTERM, _sigterm)
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
        signal.signal(signal.SIGTERM, previous)
        progress.set_listener(None)
    print_results(result)


def _sigterm(signum, frame):  # noqa: ANN001
    """SIGTERM ends the job like Ctrl-C: containers removed, unfinished trials left unrecorded."""
    raise KeyboardInterrupt


def _finish_recorded(planned) -> None:
    """Every trial is recorded: re-render the reports and print the results, no Prefect needed."""
    from flows.cli.console import print_results
    from flows.job_result import job_record, result_of
    from tasks_lib.report.report_files import write_reports

    typer.echo(f"tbflow: job {planned.job_dir}: all {len(planned.specs)} trials already recorded", err=True)
    write_reports(planned.job_dir)
    print_results(result_of(planned, job_record(planned), []))


def main() -> None:
    from flows.cli.report_cli import register

    register(app)
    app(prog_name="tbflow")


if __name__ == "__main__":
    main()
