"""``tbflow``: the command line for local runs.

It builds a ``JobConfig`` from flags (so bad values exit 2 naming the flag, before anything is
written), plans the job without Prefect (bad input, a changed identity and a missing Docker engine
fail fast), runs the job flow in Prefect's embedded local mode (no server to start) with a
progress bar, and prints the per-trial table and the summary. A job whose trials are all recorded
is finished without starting Prefect or any container.

No ``from __future__ import annotations`` here: Typer reads the annotations at runtime.
"""

import errno
import signal
import uuid
from pathlib import Path
from typing import List, Optional

import typer

from flows.cli_options import optional_value_command
from flows.embedded_prefect import configure_embedded_prefect

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Run Terminal-Bench 2.x tasks on Docker; every trial ends scored or invalid with a reason.")

_FLAG = {"dataset": "DATASET", "harnesses": "--harness", "concurrency": "--concurrency", "attempts": "--attempts",
         "include": "--include", "exclude": "--exclude", "n_tasks": "--n-tasks", "jobs_dir": "--jobs-dir",
         "job_name": "--job-name", "model": "--model", "timeout_multiplier": "--timeout-multiplier",
         "env_retries": "--env-retries", "rerun_invalid": "--rerun-invalid"}
RERUN_KINDS = ("all", "harness", "environment", "verifier")
#: exit code when the disk under the jobs dir is full (not 2: the input was fine)
DISK_FULL = 3


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
                                           help="Job directory name (default: a timestamp plus a random suffix). "
                                                "An existing job with this name is continued: recorded trials "
                                                "are kept; while another run holds the job it is refused (exit 2)."),
    timeout_multiplier: float = typer.Option(1.0, "--timeout-multiplier", min=0.01, max=100,
                                             help="Multiply every agent and verifier timeout (recorded in the job)."),
    env_retries: int = typer.Option(2, "--env-retries", min=0, max=10,
                                    help="Retries after an environment failure (build, container, Docker API)."),
    force_new: bool = typer.Option(False, "--force-new",
                                   help="If --job-name exists with another identity, start a new job directory."),
) -> None:
    """Run every task with each harness and record each trial as scored or invalid."""
    _run_job(_config(dataset=dataset, harnesses=harness, model=model, concurrency=concurrency, attempts=attempts,
                     include=include, exclude=exclude, n_tasks=n_tasks, jobs_dir=jobs_dir, job_name=job_name,
                     timeout_multiplier=timeout_multiplier, env_retries=env_retries, force_new=force_new))


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
) -> None:
    """Continue a job: keep recorded trials, run the missing (interrupted) ones."""
    from tasks_lib.errors import InputError
    from tasks_lib.job_store import JobStore

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
    _run_job(_config(**cfg))


def _run_job(config) -> None:
    from flows.console import RichProgress, print_results
    from flows import progress
    from tasks_lib.docker_client import preflight
    from tasks_lib.errors import DockerUnavailableError, InputError

    configure_embedded_prefect()
    from flows.job_plan import lock_job, pinned, plan

    lock = None
    try:  # fail fast on bad input, a changed identity, a locked job and a missing engine, before Prefect starts
        new_job_id = uuid.uuid4().hex[:12]
        planned = plan(config, new_job_id)
        if not _all_recorded(planned):
            preflight()
        planned, lock = lock_job(config, planned, new_job_id)
        if _all_recorded(planned):
            _finish_recorded(planned)
            return
        from flows.job_flow import job_flow

        config = pinned(config, planned)  # the job flow plans the same (possibly generated) job dir
        listener = RichProgress()
        progress.set_listener(listener)
        previous = signal.signal(signal.SIGTERM, _sigterm)
        try:
            result = job_flow(config=config)
        except KeyboardInterrupt:
            listener.job_finished()
            typer.echo("tbflow: interrupted; unfinished trials were not recorded and will run on resume.", err=True)
            raise typer.Exit(130)
        finally:
            signal.signal(signal.SIGTERM, previous)
            progress.set_listener(None)
    except InputError as exc:
        fail(exc.where, exc.message)
    except DockerUnavailableError as exc:
        fail("docker", str(exc))
    except OSError as exc:
        if exc.errno not in (errno.ENOSPC, errno.EDQUOT):
            raise
        fail("disk full", f"{exc.strerror} ({exc.filename or config.jobs_dir}); free space under "
             f"{config.jobs_dir} and run `tbflow resume` on the job: recorded trials are kept", DISK_FULL)
    finally:
        if lock is not None:
            lock.release()
    print_results(result)


def _all_recorded(planned) -> bool:
    return not planned.todo and planned.previous is not None


def _sigterm(signum, frame):  # noqa: ANN001
    """SIGTERM ends the job like Ctrl-C: containers removed, unfinished trials left unrecorded."""
    raise KeyboardInterrupt


def _finish_recorded(planned) -> None:
    """Every trial is recorded: re-render the reports and print the results, no Prefect needed."""
    from flows.console import print_results
    from flows.job_result import job_record, result_of
    from tasks_lib.report_files import write_reports

    typer.echo(f"tbflow: job {planned.job_dir}: all {len(planned.specs)} trials already recorded", err=True)
    write_reports(planned.job_dir)
    print_results(result_of(planned, job_record(planned), []))


@app.command()
def gc(
    jobs_dir: Optional[Path] = typer.Option(None, "--jobs-dir",
                                            help="Only jobs under this directory (default: every job)."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Only list what would be removed."),
) -> None:
    """Remove trial containers left by crashed runs, of every job on this Docker engine (never
    those of a job whose lock a live process holds)."""
    from tasks_lib.docker_client import preflight
    from tasks_lib.errors import DockerUnavailableError
    from tasks_lib.job_orphans import collect_garbage

    try:
        preflight()
    except DockerUnavailableError as exc:
        fail("docker", str(exc))
    report = collect_garbage(jobs_dir, dry_run)
    verb = "would remove" if dry_run else "removed"
    for job_dir, names in report.removed.items():
        typer.echo(f"{verb} {len(names)} container(s) of {job_dir}: {', '.join(names)}")
    for job_dir, who in report.live.items():
        typer.echo(f"kept {job_dir}: {who}")
    for job_dir, why in report.left_alone.items():
        typer.echo(f"left alone {job_dir}: {why}")
    n = sum(len(v) for v in report.removed.values())
    typer.echo(f"{verb} {n} orphan container(s); {len(report.live)} running job(s) untouched")


def main() -> None:
    from flows.report_cli import register

    register(app)
    app(prog_name="tbflow")


if __name__ == "__main__":
    main()
