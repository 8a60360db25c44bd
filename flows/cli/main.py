"""``tbflow``: the command line for local runs.

It builds a ``JobConfig`` from flags (so bad values exit 2 naming the flag, before anything is
written), plans the job without Prefect (bad input, a changed identity and a missing Docker engine
fail fast), runs the job flow with a progress bar against a local Prefect server it starts
itself, first, in parallel with planning (``flows.local_server.command_server``; or the one
``PREFECT_API_URL`` names), and prints the per-trial
table and the summary. Signals stop it cleanly (``flows.cli.stopping``). A job whose trials are all
recorded is finished without starting Prefect or any container.

No ``from __future__ import annotations`` here: Typer reads the annotations at runtime.
"""

from pathlib import Path
from typing import List, Optional

import typer

from flows.cli import gc_cli
from flows.cli.cli_options import optional_value_command
from flows.cli.datasets_cli import REGISTRY_HELP, UNPINNED_HELP
from flows.cli.harness_help import PLACEHOLDER as HARNESS_PLACEHOLDER, HarnessHelpCommand
from flows.local_server.prefect_settings import configure_embedded_prefect
from tasks_lib.report.invalid_gate import looks_like_threshold
from tasks_lib.records.record_models import DEFAULT_MAX_LOG_MB

app = typer.Typer(add_completion=False, no_args_is_help=True, rich_markup_mode=None,
                  help="Run Terminal-Bench 2.x tasks on Docker; every trial ends scored or invalid with a reason.")

_FLAG = {"dataset": "DATASET", "harnesses": "--harness", "concurrency": "--concurrency", "attempts": "--attempts",
         "include": "--include", "exclude": "--exclude", "n_tasks": "--n-tasks", "jobs_dir": "--jobs-dir",
         "job_name": "--job-name", "model": "--model", "timeout_multiplier": "--timeout-multiplier",
         "env_retries": "--env-retries", "rerun_invalid": "--rerun-invalid", "max_log_mb": "--max-log-mb",
         "order": "--order", "order_seed": "--seed", "registry": "--registry", "build": "--build",
         "verbatim_test_sh": "--verbatim-test-sh", "regrade_from": "SOURCE_JOB",
         "fail_on_invalid": "--fail-on-invalid", "prices": "--prices"}
RERUN_KINDS = ("all", "harness", "environment", "verifier")
ORDER_HELP = ("Start order: expected (longest expected duration first: earlier runs here, else the task's "
              "estimate, else its timeout), name, or random.")
SEED_HELP = "Seed for --order random (default: a new one, recorded)."
VERBATIM_HELP = ("Run tests/test.sh verbatim, with the runner it assembles in the container (detection only), "
                 "instead of tbflow's supplied runner (docs/judge.md).")


@app.callback()
def _root() -> None:
    """Run Terminal-Bench 2.x tasks on Docker; every trial ends scored or invalid with a reason."""


def fail(where: str, message: str, code: int = 2) -> None:
    """One line naming the flag or file, then exit ``code`` (2: flows/cli/job_start.py, ``ExitCode``)."""
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


PRICES_HELP = ("Model price table for costs (LiteLLM's format, JSON or TOML); it wins over tbflow's pinned "
               "default table. An unpriced model's cost stays unknown.")


@app.command(cls=optional_value_command("--fail-on-invalid", "any", looks_like_threshold, base=HarnessHelpCommand))
def run(
    dataset: str = typer.Argument(..., metavar="DATASET",
                                  help="A task directory, a directory of them, or a dataset by name: "
                                       "NAME@VERSION (registry), ORG/NAME@REF (package)."),
    registry: Optional[str] = typer.Option(None, "--registry", metavar="PATH|URL", help=REGISTRY_HELP),
    allow_unpinned: bool = typer.Option(False, "--allow-unpinned", help=UNPINNED_HELP),
    build: bool = typer.Option(False, "--build", help="Build every task from its Dockerfile, even when it names "
                                                      "a docker_image (default: that image, else pulled, else "
                                                      "built)."),
    verbatim_test_sh: bool = typer.Option(False, "--verbatim-test-sh", help=VERBATIM_HELP),
    harness: List[str] = typer.Option(["oracle"], "--harness", "-a", metavar="NAME", help=HARNESS_PLACEHOLDER),
    model: Optional[str] = typer.Option(None, "--model", "-m", metavar="PROVIDER/MODEL",
                                        help="Model for model harnesses. MODEL goes to the harness's own API; a "
                                             "PROVIDER naming another API (openai, anthropic, gemini) is refused, "
                                             "any other is a label."),
    concurrency: int = typer.Option(1, "--concurrency", "-n", min=1, max=64, metavar="N",
                                    help="Trials running at once."),
    attempts: int = typer.Option(1, "--attempts", "-k", min=1, max=100, metavar="K",
                                 help="Trials per task and harness."),
    include: List[str] = typer.Option([], "--include", metavar="GLOB",
                                      help="Only tasks whose name matches (repeatable)."),
    exclude: List[str] = typer.Option([], "--exclude", metavar="GLOB",
                                      help="Skip tasks whose name matches (repeatable)."),
    n_tasks: Optional[int] = typer.Option(None, "--n-tasks", min=1, metavar="N",
                                          help="Run only the first N tasks (by name)."),
    jobs_dir: str = typer.Option("jobs", "--jobs-dir", metavar="DIR|URL",
                                 help="Where job directories are written: a directory, or a store URL "
                                      "(s3://BUCKET/PREFIX; credentials from AWS_*)."),
    job_name: Optional[str] = typer.Option(None, "--job-name", metavar="NAME",
                                           help="Job directory name (default: time + random suffix). An existing "
                                                "job is continued, its records kept. {date}, {datetime}: UTC now."),
    timeout_multiplier: float = typer.Option(1.0, "--timeout-multiplier", min=0.01, max=100, metavar="X",
                                             help="Multiply every agent and verifier timeout."),
    env_retries: int = typer.Option(2, "--env-retries", min=0, max=10, metavar="N",
                                    help="Retries after an environment failure (build, container, Docker)."),
    force_new: bool = typer.Option(False, "--force-new",
                                   help="If --job-name exists with another identity, start a new job directory."),
    max_log_mb: int = typer.Option(DEFAULT_MAX_LOG_MB, "--max-log-mb", min=1, metavar="MB",
                                   help="Cut each log file copied out of a trial at MB MiB (a log dir at 4x)."),
    order: str = typer.Option("expected", "--order", metavar="ORDER", help=ORDER_HELP),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, metavar="N", help=SEED_HELP),
    fail_on_invalid: Optional[str] = typer.Option(
        None, "--fail-on-invalid", metavar="[=N|=P%]",
        help="Exit 1 when trials are invalid, errors or unrecorded: any, more than N, or more than P percent."),
    prices: Optional[Path] = typer.Option(None, "--prices", metavar="FILE", dir_okay=False, help=PRICES_HELP),
) -> None:
    """Run every task with each harness and record each trial as scored or invalid.

    Ctrl-C, SIGTERM, SIGHUP: exit 130/143/129, containers removed, resume command printed.

    A second signal stops at once. Prefect: PREFECT_API_URL if set, else a local server tbflow runs.
    """
    _run_job(_config(dataset=dataset, registry=registry, allow_unpinned=allow_unpinned, build=build,
                     verbatim_test_sh=verbatim_test_sh, harnesses=harness, model=model, concurrency=concurrency,
                     attempts=attempts,
                     include=include, exclude=exclude, n_tasks=n_tasks, jobs_dir=jobs_dir, job_name=job_name,
                     timeout_multiplier=timeout_multiplier, env_retries=env_retries, force_new=force_new,
                     max_log_mb=max_log_mb, order=order, order_seed=seed, fail_on_invalid=fail_on_invalid,
                     prices=str(prices) if prices else None))


@app.command(cls=optional_value_command("--rerun-invalid", "all", lambda v: v in RERUN_KINDS))
def resume(
    job_dir: str = typer.Argument(..., metavar="JOB_DIR",
                                  help="The job directory to continue (holds job.json), or the job's URL "
                                       "in a store (s3://bucket/jobs/NAME)."),
    rerun_invalid: Optional[str] = typer.Option(
        None, "--rerun-invalid", metavar="[=KIND]",
        help="Also re-run recorded invalid trials: all, or one kind (harness, environment, verifier). "
             "Earlier tries are kept under attempts/."),
    concurrency: Optional[int] = typer.Option(None, "--concurrency", "-n", min=1, max=64, metavar="N",
                                              help="Trials running at once (default: as recorded)."),
    env_retries: Optional[int] = typer.Option(None, "--env-retries", min=0, max=10, metavar="N",
                                              help="Retries after an environment failure (default: as recorded)."),
    order: Optional[str] = typer.Option(None, "--order", metavar="ORDER",
                                        help=ORDER_HELP + " Default: as recorded."),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, metavar="N", help=SEED_HELP),
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
    cfg.pop("prices", None)  # the job keeps its own copy (prices.json): the trials of a resume are priced alike
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
    """Start the command's Prefect server first, while the rest is imported and the job planned;
    only a job that may be all recorded already (an existing --job-name, resume) is planned before
    anything starts (it may need no server at all)."""
    configure_embedded_prefect()
    from flows.local_server import command_server
    from tasks_lib.store.remote_store import is_url, working_root

    root = working_root(config.jobs_dir) if is_url(config.jobs_dir) else Path(config.jobs_dir)  # a store: its copy
    maybe_recorded = bool(config.job_name) and (root / config.job_name / "job.json").is_file()
    server = None if maybe_recorded else command_server.start()
    from flows.cli.job_start import exit_after_run, start
    from flows.cli.stopping import StopHandlers

    with StopHandlers() as stop:
        started = start(config, server, lambda: command_server.start(), stop)
        if started.finished:  # all recorded: reports re-rendered, results shown, no Prefect
            return
        from flows.cli.job_run import run_flow  # Prefect: only for a job with trials to run

        stop.quiet_prefect_console()
        result, gate = run_flow(started, stop)
    exit_after_run(started, result, gate)


gc_cli.register(app)  # here, not in main(): tests drive ``app`` directly and it imports nothing heavy


def main() -> None:
    from flows.cli import datasets_cli, export_cli, harnesses_cli, regrade_cli, report_cli, server_cli

    report_cli.register(app)
    regrade_cli.register(app, lambda cfg: _run_job(_config(**cfg)))
    export_cli.register(app)
    server_cli.register(app)
    datasets_cli.register(app)
    harnesses_cli.register(app)
    app(prog_name="tbflow")


if __name__ == "__main__":
    main()
