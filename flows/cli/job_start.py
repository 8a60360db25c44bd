"""``tbflow run``/``resume`` once the command's config is built: plan and lock the job, run it,
print the results, and exit with the code that says how it went (docs/running-jobs.md).

Two tables decide the exits: ``REFUSALS`` (a failure that is the input's or the machine's: one line
naming it, the job's records kept) and ``ExitCode`` (every code a run can end with). Nothing here
imports Prefect: a job whose trials are all recorded is finished without it (bench/RESULTS.md,
"Resume of a fully recorded job"); the run itself is flows/cli/job_run.py.
"""

from __future__ import annotations

import signal
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from enum import IntEnum

import typer

from flows.cli.console import print_results
from flows.cli.stopping import StopHandlers, stop_summary
from flows.job.job_config import JobConfig
from flows.job.job_plan import JobPlan, lock_job, pinned, plan
from flows.job.job_result import job_record, result_of
from flows.local_server.command_server import CommandServer
from tasks_lib import interrupts
from tasks_lib.container.docker_client import preflight
from tasks_lib.errors import DockerUnavailableError, InputError, disk_full
from tasks_lib.report.invalid_gate import FLAG, parse_threshold
from tasks_lib.report.report_files import write_reports
from tasks_lib.store.remote_store import mirror_for


Server = CommandServer


class ExitCode(IntEnum):
    """What a ``run``/``resume`` exits with (a signal: 128 + its number, flows/cli/stopping.py)."""

    RAN = 0  # the job ran: its verdicts are in the records and reports
    FAILED = 1  # --fail-on-invalid tripped, or the Prefect server could not start
    REFUSED = 2  # bad input, a job held by another run, no Docker engine: nothing was run
    TBFLOW_ERROR = 3  # some trial was ended by a bug in tbflow (status "error")
    DISK_FULL = 4  # the disk under the jobs dir is full (not 2: the input was fine)


@dataclass(frozen=True)
class Refusal:
    """One row of ``REFUSALS``: a failure that ends the command with one line, no traceback."""

    kind: type[BaseException]
    where: Callable[[BaseException, JobConfig], str]
    message: Callable[[BaseException, JobConfig], str]
    code: ExitCode
    #: only while the job starts (planning, locking, the server): later it is a bug, shown in full
    at_start_only: bool = False
    applies: Callable[[BaseException], bool] = lambda exc: True


def _disk_full_message(exc: BaseException, config: JobConfig) -> str:
    err = exc if isinstance(exc, OSError) else OSError()
    return (f"{err.strerror} ({err.filename or config.jobs_dir}); free space under {config.jobs_dir} and run "
            "`tbflow resume` on the job: recorded trials are kept")


REFUSALS: tuple[Refusal, ...] = (
    Refusal(InputError, lambda e, c: getattr(e, "where", "input"),
            lambda e, c: getattr(e, "message", str(e)),
            ExitCode.REFUSED),
    Refusal(DockerUnavailableError, lambda e, c: "docker", lambda e, c: str(e), ExitCode.REFUSED),
    Refusal(RuntimeError, lambda e, c: "prefect", lambda e, c: str(e), ExitCode.FAILED, at_start_only=True),
    Refusal(OSError, lambda e, c: "disk full", _disk_full_message, ExitCode.DISK_FULL, applies=disk_full),
)


def refusal_of(exc: BaseException, config: JobConfig, *, starting: bool) -> tuple[str, str, ExitCode] | None:
    """(where, message, exit code) of the first row of ``REFUSALS`` that ``exc`` matches; None: not a refusal."""
    for row in REFUSALS:
        if isinstance(exc, row.kind) and row.applies(exc) and (starting or not row.at_start_only):
            return row.where(exc, config), row.message(exc, config), row.code
    return None


def refuse(where: str, message: str, code: int = ExitCode.REFUSED) -> None:
    typer.echo(f"tbflow: error: {where}: {message}", err=True)
    raise typer.Exit(int(code))


@dataclass
class Started:
    """A job that is planned, locked and about to run (or, ``finished``, already all recorded)."""

    config: JobConfig
    planned: JobPlan
    lock: object
    server: Server | None = None  # the command's Prefect server, ready (None: finished)
    finished: bool = False


def exit_after_run(started: Started, result, gate: str | None) -> None:
    """Print the results of a job that ran, and exit non-zero when a trial ended in a tbflow bug
    or ``--fail-on-invalid`` tripped (``gate``: its message)."""
    print_results(result)
    if any(r.validity.status == "error" for r in result.records):
        raise typer.Exit(int(ExitCode.TBFLOW_ERROR))
    if gate is not None:
        gate_exit(result, started.config.fail_on_invalid)


def start(config: JobConfig, server: Server | None, start_server: Callable[[], Server],
          stop: StopHandlers) -> Started:
    """Fail fast on bad input, a changed identity, a job held by another run and a missing engine;
    then lock the job and have the server ready. An all-recorded job is finished here."""
    lock = None
    try:
        new_job_id = uuid.uuid4().hex[:12]
        planned = plan(config, new_job_id)
        for note in planned.notes:  # the dataset was fetched, or a changed cached copy fetched again
            typer.echo(f"tbflow: {note}", err=True)
        if not _all_recorded(planned):
            preflight()
        planned, lock = lock_job(config, planned, new_job_id)  # refused at once while another run holds it
        if _all_recorded(planned):
            try:
                finish_recorded(planned)
            finally:
                lock.release()
            return Started(config, planned, None, finished=True)
        config = pinned(config, planned)  # the job flow plans the same (possibly generated) job dir
        server = server or start_server()
        stop.job_dir = planned.job_dir
        server.watch_job_dir(planned.job_dir)
        import flows.job_flow  # noqa: F401 - importing the job flow (and Prefect) overlaps the server's start
        from flows.process_heap import freeze_imported

        freeze_imported()  # Prefect's objects out of the collector's way (flows/process_heap.py)

        server.wait_ready()
        return Started(config, planned, lock, server)
    except KeyboardInterrupt:
        release(lock)
        stopped(stop, planned=None)
    except typer.Exit:  # the gate of an all-recorded job: its status and message are the command's
        release(lock)
        raise
    except Exception as exc:
        release(lock)
        found = refusal_of(exc, config, starting=True)
        if found is None:
            raise
        refuse(*found)
    raise AssertionError("unreachable: stopped() and refuse() exit")


def _all_recorded(planned: JobPlan) -> bool:
    return not planned.todo and planned.previous is not None


def release(lock) -> None:
    if lock is not None:
        lock.release()


def stopped(stop: StopHandlers, planned: JobPlan | None) -> None:
    """Print the one-paragraph summary of a stopped job and exit 128 + the signal number."""
    job_dir = stop.job_dir
    trials = [s.trial_id for s in planned.specs] if planned is not None else []
    mirror = mirror_for(job_dir) if job_dir is not None else None  # a job in a store resumes by its URL
    resume = f"tbflow resume {mirror.url if mirror else job_dir}" if job_dir is not None else ""
    try:
        typer.echo(stop_summary(job_dir, stop.signum or signal.SIGINT, trials, resume, interrupts.stop_reason()),
                   err=True)
    except (OSError, ValueError):  # the terminal is gone (SIGHUP)
        pass
    raise typer.Exit(stop.exit_code)


def finish_recorded(planned: JobPlan) -> None:
    """Every trial is recorded: re-render the reports and print the results, no Prefect needed."""
    typer.echo(f"tbflow: job {planned.job_dir}: all {len(planned.specs)} trials already recorded", err=True)
    write_reports(planned.job_dir)
    result = result_of(planned, job_record(planned), [])
    print_results(result)
    gate_exit(result, planned.config.fail_on_invalid)


def gate_exit(result, fail_on_invalid: str | None) -> None:
    """``--fail-on-invalid``: exit 1 with the gate's message when it trips (the job is recorded)."""
    if not fail_on_invalid:
        return
    from flows.job.job_verdict import verdict_of  # Prefect: only once a gate is asked for

    verdict = verdict_of(result, parse_threshold(fail_on_invalid), flag=FLAG)
    if verdict.tripped:
        typer.echo(f"tbflow: {verdict.summary()}; {verdict.gate}", err=True)
        raise typer.Exit(int(ExitCode.FAILED))
