"""``tbflow``: the command line for local runs.

It builds a ``JobConfig`` from flags (so bad values exit 2 naming the flag, before anything is
written), plans the job without Prefect (bad input, a changed identity and a missing Docker engine
fail fast), runs the job flow with a progress bar against a local Prefect server it starts
itself, first, in parallel with planning (``flows.local_server.command_server``), and prints the per-trial
table and the summary. Signals stop it cleanly (``flows.cli.stopping``). A job whose trials are all
recorded is finished without starting Prefect or any container.

No ``from __future__ import annotations`` here: Typer reads the annotations at runtime.
"""

import signal
import uuid
from pathlib import Path
from typing import List, Optional

import typer

from flows.cli import gc_cli
from flows.cli.cli_options import optional_value_command
from flows.cli.datasets_cli import REGISTRY_HELP, UNPINNED_HELP
from flows.local_server.prefect_settings import configure_embedded_prefect
from tasks_lib.report.invalid_gate import looks_like_threshold
from tasks_lib.records.record_models import DEFAULT_MAX_LOG_MB

app = typer.Typer(add_completion=False, no_args_is_help=True,
                  help="Run Terminal-Bench 2.x tasks on Docker; every trial ends scored or invalid with a reason.")

_FLAG = {"dataset": "DATASET", "harnesses": "--harness", "concurrency": "--concurrency", "attempts": "--attempts",
         "include": "--include", "exclude": "--exclude", "n_tasks": "--n-tasks", "jobs_dir": "--jobs-dir",
         "job_name": "--job-name", "model": "--model", "timeout_multiplier": "--timeout-multiplier",
         "env_retries": "--env-retries", "rerun_invalid": "--rerun-invalid", "max_log_mb": "--max-log-mb",
         "order": "--order", "order_seed": "--seed", "registry": "--registry", "build": "--build",
         "fail_on_invalid": "--fail-on-invalid"}
RERUN_KINDS = ("all", "harness", "environment", "verifier")
#: exit code of a run in which some trial was ended by a bug in tbflow (status "error")
EXIT_TBFLOW_ERROR = 3
#: exit code when the disk under the jobs dir is full (not 2: the input was fine)
DISK_FULL = 4
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

    from flows.job.job_config import JobConfig

    try:
        return JobConfig(**kw)
    except ValidationError as exc:
        err = exc.errors()[0]
        field = str(err["loc"][0])
        msg = err["msg"].removeprefix("Value error, ")
        if err["type"] == "literal_error":
            msg = f"unknown value {err['input']!r}: {msg}"
        elif err["type"] == "string_pattern_mismatch" and field == "job_name":
            msg = (f"{err['input']!r}: use letters, digits, '.', '_' or '-' (max 128), starting with a letter or "
                   "digit, and the template fields {date} and {datetime}")
        fail(_FLAG.get(field, field), msg)


@app.command(cls=optional_value_command("--fail-on-invalid", "any", looks_like_threshold))
def run(
    dataset: str = typer.Argument(..., help="A task directory, a directory of task directories, or a dataset by "
                                            "name: NAME@VERSION (registry), ORG/NAME@REF (package)."),
    registry: Optional[str] = typer.Option(None, "--registry", metavar="PATH|URL", help=REGISTRY_HELP),
    allow_unpinned: bool = typer.Option(False, "--allow-unpinned", help=UNPINNED_HELP),
    build: bool = typer.Option(False, "--build", help="Build every task from its environment/Dockerfile, even when "
                                                      "[environment] docker_image names an image (default: that "
                                                      "image if present, else pulled, else built)."),
    harness: List[str] = typer.Option(["oracle"], "--harness", "-a",
                                      help="Harness to run (repeatable): a built-in (oracle, nop, codex, opencode, "
                                           "pi, claude-code) or installed name (tbflow harnesses), module:Class, "
                                           "or path/file.py:Class."),
    model: Optional[str] = typer.Option(None, "--model", "-m", help="PROVIDER/MODEL for model harnesses."),
    concurrency: int = typer.Option(1, "--concurrency", "-n", min=1, max=64, help="Trials running at once."),
    attempts: int = typer.Option(1, "--attempts", "-k", min=1, max=100, help="Trials per task and harness."),
    include: List[str] = typer.Option([], "--include", help="Only tasks whose name matches this glob (repeatable)."),
    exclude: List[str] = typer.Option([], "--exclude", help="Skip tasks whose name matches this glob (repeatable)."),
    n_tasks: Optional[int] = typer.Option(None, "--n-tasks", min=1, help="Run only the first N tasks (by name)."),
    jobs_dir: str = typer.Option("jobs", "--jobs-dir",
                                 help="Where job directories are written: a directory, or a store URL "
                                      "(s3://BUCKET/PREFIX) that every machine reaches; credentials from the "
                                      "environment (AWS_*), never in the URL."),
    job_name: Optional[str] = typer.Option(None, "--job-name",
                                           help="Job directory name (default: a timestamp plus a random suffix). "
                                                "An existing job with this name is continued: recorded trials "
                                                "are kept; while another run holds the job it is refused (exit 2). "
                                                "{date} and {datetime} render the current UTC time "
                                                "(nightly-{date}: one job a day)."),
    timeout_multiplier: float = typer.Option(1.0, "--timeout-multiplier", min=0.01, max=100,
                                             help="Multiply every agent and verifier timeout (recorded in the job)."),
    env_retries: int = typer.Option(2, "--env-retries", min=0, max=10,
                                    help="Retries after an environment failure (build, container, Docker API)."),
    force_new: bool = typer.Option(False, "--force-new",
                                   help="If --job-name exists with another identity, start a new job directory."),
    max_log_mb: int = typer.Option(DEFAULT_MAX_LOG_MB, "--max-log-mb", min=1,
                                   help="Cut each log file copied out of a trial container at this many MiB, and "
                                        "each log dir at 4 times that (noted in the record and the report)."),
    order: str = typer.Option("expected", "--order", metavar="expected|name|random", help=ORDER_HELP),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, help=SEED_HELP),
    fail_on_invalid: Optional[str] = typer.Option(
        None, "--fail-on-invalid", metavar="[=N|=P%]",
        help="Exit 1 when trials are invalid, ended by a tbflow error or left without a record: bare (any), more "
             "than N, or more than P percent (as `tbflow report --fail-on-invalid`); the job's Prefect run ends "
             "Failed, named 'Not all scored'."),
) -> None:
    """Run every task with each harness and record each trial as scored or invalid.

    Ctrl-C, SIGTERM, SIGHUP: exit 130/143/129, containers removed, resume command printed.

    A second signal stops at once. Prefect: PREFECT_API_URL if set, else a local server tbflow runs.
    """
    _run_job(_config(dataset=dataset, registry=registry, allow_unpinned=allow_unpinned, build=build,
                     harnesses=harness, model=model, concurrency=concurrency, attempts=attempts,
                     include=include, exclude=exclude, n_tasks=n_tasks, jobs_dir=jobs_dir, job_name=job_name,
                     timeout_multiplier=timeout_multiplier, env_retries=env_retries, force_new=force_new,
                     max_log_mb=max_log_mb, order=order, order_seed=seed, fail_on_invalid=fail_on_invalid))


@app.command(cls=optional_value_command("--rerun-invalid", "all", lambda v: v in RERUN_KINDS))
def resume(
    job_dir: str = typer.Argument(..., help="The job directory to continue (holds job.json), or the job's URL "
                                            "in a store (s3://bucket/jobs/NAME)."),
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
    from tasks_lib.store.job_store import JobStore
    from tasks_lib.store.remote_store import attach, check_store, is_url, split_job_url

    if rerun_invalid is not None and rerun_invalid not in RERUN_KINDS:
        fail("--rerun-invalid", f"expected one of {', '.join(RERUN_KINDS)}, got {rerun_invalid!r}")
    try:
        if is_url(job_dir):  # a job in a store: read its record from there (into this machine's copy)
            jobs_dir, name = split_job_url(job_dir)
            check_store(jobs_dir)
            mirror = attach(jobs_dir, name)
            mirror.pull()
            record = JobStore(mirror.local).read_job()
        else:
            local = Path(job_dir).resolve()
            record = JobStore(local).read_job()
            jobs_dir, name = str(local.parent), local.name
    except InputError as exc:
        fail(exc.where, exc.message)
    cfg = dict(record.config)
    if record.dataset_source is not None and record.dataset != cfg.get("dataset"):
        cfg["dataset"] = record.dataset  # name@version as resolved (a name without a version stays that version)
    cfg.pop("key_secrets", None)  # the CLI's keys come from its environment; Secret blocks live on a deployment's server
    cfg.update(jobs_dir=jobs_dir, job_name=name, force_new=False,
               rerun_invalid=rerun_invalid, shards=0)  # the CLI runs trials here (shards: docs/deployments.md)
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
    configure_embedded_prefect()
    from flows.local_server import command_server
    # The server starts first, while we import, plan and check Docker; only a job that may be
    # all recorded already (an existing --job-name, resume) is planned before anything starts.
    from tasks_lib.store.remote_store import is_url, working_root

    root = working_root(config.jobs_dir) if is_url(config.jobs_dir) else Path(config.jobs_dir)  # a store: its copy
    job_json = root / (config.job_name or "") / "job.json"
    from flows.local_server.warm_server import idle_sec

    shared = idle_sec() > 0  # the warm server (README.md, "Prefect"); 0 = one server per command
    server = None if config.job_name and job_json.is_file() else command_server.start(shared)
    from flows.cli.console import RichProgress, print_results
    from flows.job import progress
    from flows.job.job_plan import lock_job, pinned, plan
    from flows.cli.stopping import StopHandlers
    from tasks_lib.container.docker_client import preflight
    from tasks_lib.errors import DockerUnavailableError, InputError, disk_full

    from flows.local_server.prefork_client import adopt_environment
    from flows.local_server.prefect_settings import no_heartbeats_on
    from flows.job.job_verdict import InvalidTrialsGate

    lock = None
    with StopHandlers() as stop:
        try:  # fail fast on bad input, a changed identity, a job held by another run and a missing engine
            new_job_id = uuid.uuid4().hex[:12]
            planned = plan(config, new_job_id)
            for note in planned.notes:  # the dataset was fetched, or a changed cached copy fetched again
                typer.echo(f"tbflow: {note}", err=True)
            if not _all_recorded(planned):
                preflight()
            planned, lock = lock_job(config, planned, new_job_id)  # refused at once while another run holds it
            if _all_recorded(planned):
                try:
                    _finish_recorded(planned)
                finally:
                    lock.release()
                return
            config = pinned(config, planned)  # the job flow plans the same (possibly generated) job dir
            server = server or command_server.start(shared)
            assert server is not None
            stop.job_dir = planned.job_dir
            server.watch_job_dir(planned.job_dir)
            from flows.job_flow import job_flow  # importing Prefect also overlaps the server's start

            server.wait_ready()
            adopt_environment()  # in a prefork's child: Prefect re-reads the now final environment
        except InputError as exc:
            _release(lock)
            fail(exc.where, exc.message)
        except DockerUnavailableError as exc:
            _release(lock)
            fail("docker", str(exc))
        except RuntimeError as exc:
            _release(lock)
            fail("prefect", str(exc), code=1)
        except KeyboardInterrupt:
            _release(lock)
            _stopped(stop, planned=None)
        stop.quiet_prefect_console()
        def job_dir_in_use(job_dir: str) -> None:  # the flow names an unnamed job itself
            if server is not None:
                server.watch_job_dir(job_dir)
            stop.job_dir = Path(job_dir)

        listener = RichProgress(on_job_dir=job_dir_in_use)
        progress.set_listener(listener)
        gate = None
        try:
            with no_heartbeats_on(server):
                result = job_flow(**config.flow_parameters())
        except InvalidTrialsGate as exc:  # --fail-on-invalid tripped: the job ran; show it, then exit 1
            result, gate = exc.result, str(exc)
        except InputError as exc:
            fail(exc.where, exc.message)
        except DockerUnavailableError as exc:
            fail("docker", str(exc))
        except OSError as exc:
            if not disk_full(exc):
                raise
            fail("disk full", f"{exc.strerror} ({exc.filename or config.jobs_dir}); free space under "
                 f"{config.jobs_dir} and run `tbflow resume` on the job: recorded trials are kept", DISK_FULL)
        except BaseException as exc:
            if stop.signum is None and not _is_termination(exc):
                raise
            listener.job_finished()
            if stop.signum is None:  # Prefect turned a SIGTERM into TerminationSignal and did not re-send it
                stop.signum = signal.SIGTERM
            _stopped(stop, planned)
        finally:
            progress.set_listener(None)
            _release(lock)
    print_results(result)
    if any(r.validity.status == "error" for r in result.records):
        raise typer.Exit(EXIT_TBFLOW_ERROR)
    if gate is not None:
        _gate_exit(result, config.fail_on_invalid)


def _all_recorded(planned) -> bool:
    return not planned.todo and planned.previous is not None


def _release(lock) -> None:
    if lock is not None:
        lock.release()


def _is_termination(exc: BaseException) -> bool:
    from prefect.exceptions import TerminationSignal

    return isinstance(exc, (KeyboardInterrupt, TerminationSignal))


def _stopped(stop, planned) -> None:
    """Print the one-paragraph summary of a stopped job and exit 128 + the signal number."""
    from flows.cli.stopping import stop_summary

    job_dir = stop.job_dir
    trials = [s.trial_id for s in planned.specs] if planned is not None else []
    from tasks_lib.store.remote_store import mirror_for

    mirror = mirror_for(job_dir) if job_dir is not None else None  # a job in a store resumes by its URL
    resume = f"tbflow resume {mirror.url if mirror else job_dir}" if job_dir is not None else ""
    try:
        typer.echo(stop_summary(job_dir, stop.signum or signal.SIGINT, trials, resume), err=True)
    except (OSError, ValueError):  # the terminal is gone (SIGHUP)
        pass
    raise typer.Exit(stop.exit_code)


def _finish_recorded(planned) -> None:
    """Every trial is recorded: re-render the reports and print the results, no Prefect needed."""
    from flows.cli.console import print_results
    from flows.job.job_result import job_record, result_of
    from tasks_lib.report.report_files import write_reports

    typer.echo(f"tbflow: job {planned.job_dir}: all {len(planned.specs)} trials already recorded", err=True)
    write_reports(planned.job_dir)
    result = result_of(planned, job_record(planned), [])
    print_results(result)
    _gate_exit(result, planned.config.fail_on_invalid)


def _gate_exit(result, fail_on_invalid: str | None) -> None:
    """``--fail-on-invalid``: exit 1 with the gate's message when it trips (the job is recorded)."""
    if not fail_on_invalid:
        return
    from flows.job.job_verdict import verdict_of
    from tasks_lib.report.invalid_gate import FLAG, parse_threshold

    verdict = verdict_of(result, parse_threshold(fail_on_invalid), flag=FLAG)
    if verdict.tripped:
        typer.echo(f"tbflow: {verdict.summary()}; {verdict.gate}", err=True)
        raise typer.Exit(1)


gc_cli.register(app)  # here, not in main(): tests drive ``app`` directly and it imports nothing heavy


def main() -> None:
    import sys

    from flows.local_server.prefork_client import try_handoff

    code = try_handoff(sys.argv)  # run by an already-imported process when one is up (flows/local_server/prefork_main.py)
    if code is not None:
        raise SystemExit(code)
    from flows.cli import datasets_cli, harnesses_cli, report_cli, server_cli
    from flows.local_server.fast_exit import exit_now

    report_cli.register(app)
    server_cli.register(app)
    datasets_cli.register(app)
    harnesses_cli.register(app)
    try:
        app(prog_name="tbflow")
    except SystemExit as exc:
        exit_now(exc)
        raise


if __name__ == "__main__":
    main()
