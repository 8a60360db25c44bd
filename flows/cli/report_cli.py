"""``tbflow report`` and ``tbflow diff``: reports from records alone (no Docker, no Prefect).

``register(app)`` adds both commands to the main Typer app. Exit codes: 0 ok; 1 when
``--fail-on-invalid`` or ``--fail-on-flagged`` trips (the reason is printed); 2 for bad input (not a job directory, a bad
threshold, an unknown harness), as one line naming the flag or path, never a traceback.

``--fail-on-invalid`` takes an *optional* value, which Typer cannot declare: the command class
below rewrites a bare ``--fail-on-invalid`` to ``--fail-on-invalid=any`` before parsing, unless
the next word is itself a threshold (``5``, ``10%``, ``any``), so ``--fail-on-invalid``,
``--fail-on-invalid=5``, ``--fail-on-invalid 5`` and ``--fail-on-invalid=10%`` all work, before or
after JOB_DIR.

No ``from __future__ import annotations`` here: Typer reads the annotations at runtime.
"""

from enum import Enum
from pathlib import Path

import typer

from flows.cli.cli_options import normalize_optional_value as _normalize
from flows.cli.cli_options import optional_value_command

from tasks_lib.errors import InputError
from tasks_lib.records.trial_cost import cost_text
from tasks_lib.report.flag_gate import FLAG as FLAGGED
from tasks_lib.report.flag_gate import check_flags, looks_like_kinds, parse_kinds
from tasks_lib.report.invalid_gate import FLAG, check, looks_like_threshold, parse_threshold
from tasks_lib.report.job_diff import diff_jobs
from tasks_lib.store.job_lock import LOCK_NAME
from tasks_lib.store.remote_store import is_url
from tasks_lib.store.store_jobs import open_job
from tasks_lib.report.render_diff import render_diff
from tasks_lib.report.render_junit import render_junit
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.report_files import render_results_json, write_reports
from tasks_lib.report.results_model import Results
from tasks_lib.report.results_build import load_results
from tasks_lib.text_clean import visible
from tasks_lib.trial.reprice import reprice_job


class ReportFormat(str, Enum):
    md = "md"
    junit = "junit"
    json = "json"


class DiffFormat(str, Enum):
    md = "md"
    json = "json"


def normalize_optional_value(args: list[str], flag: str = FLAG) -> list[str]:
    """Give a bare ``flag`` the value ``any`` unless the next word is a threshold."""
    return _normalize(args, flag, "any", looks_like_threshold)


class _OptionalValueCommand(optional_value_command(FLAG, "any", looks_like_threshold)):  # type: ignore[misc]
    def parse_args(self, ctx, args):  # noqa: ANN001, ANN201 (click's signature)
        return super().parse_args(ctx, _normalize(list(args), FLAGGED, "any", looks_like_kinds))


def _input_error(exc: InputError) -> typer.Exit:
    typer.echo(f"error: {exc}", err=True)
    return typer.Exit(2)


def plain_summary(results: Results) -> str:
    """A few plain lines for the terminal when no format was asked for. Names come from a job
    directory that may have been copied from anywhere: shown with ``visible`` escapes."""
    job = results.job
    lines = [f"{visible(job.job_name)}: {results.total_trials} trials, {results.total_scored} scored, "
             f"{results.total_invalid} invalid"]
    for s in results.summaries:
        if s.scored == 0:
            lines.append(f"  {visible(s.harness)}: no scored trial ({s.invalid} invalid); no mean reward")
            continue
        ci = (f" (95% CI {s.reward_interval.low:.3f}-{s.reward_interval.high:.3f})" if s.reward_interval else "")
        lines.append(f"  {visible(s.harness)}: mean reward {s.mean_reward:.3f}{ci} over {s.scored} scored; "
                     f"{s.passed} passed, {s.invalid} invalid"
                     + (f"; cost {cost_text(s.cost)}" if s.harness_kind == "model" else ""))
    if results.task_problems:
        lines.append(f"  {len(results.task_problems)} task(s) could not be loaded")
    if results.missing_trial_ids:
        lines.append(f"  {len(results.missing_trial_ids)} planned trial(s) have no record (interrupted or not run)")
    return "\n".join(lines)


PRICES_HELP = ("Price (or re-price) the job's model trials with this table (LiteLLM's format, JSON or TOML, over "
               "tbflow's pinned default table) from their recorded model exchange: trajectories, trial records and "
               "reports are rewritten, verdicts never change; the table becomes the job's own (prices.json).")


def _reprice(job_dir: Path, prices: Path) -> None:
    """``--prices``: every model trial priced with the table before the reports are written."""
    if (job_dir / LOCK_NAME).is_file():
        raise InputError(str(job_dir), "the job is running or died holding its lock: price it once it ended")
    changed = reprice_job(job_dir, prices)
    typer.echo(f"priced with {visible(str(prices))}: {changed} trial record(s) changed", err=True)


def _show(format: ReportFormat | None, results: Results, written_to: str | None) -> None:
    """The rendering asked for on stdout, else the plain summary (and where the reports went)."""
    if format is ReportFormat.md:
        typer.echo(render_markdown(results), nl=False)
    elif format is ReportFormat.junit:
        typer.echo(render_junit(results), nl=False)
    elif format is ReportFormat.json:
        typer.echo(render_results_json(results), nl=False)
    else:
        typer.echo(plain_summary(results))
        if written_to is not None:
            typer.echo(f"wrote report.md, report.html, junit.xml and results.json in {written_to}")


def report(
    job_ref: str = typer.Argument(..., metavar="JOB_DIR", show_default=False, help=(
        "The job directory (holds job.json), or a job in a store (s3://BUCKET/PREFIX/NAME): what the store "
        "holds is read first.")),
    format: ReportFormat | None = typer.Option(
        None, "--format", "-f", help="Print this rendering to stdout (md = the Markdown report)."),
    fail_on_invalid: str | None = typer.Option(
        None, FLAG, metavar="[=N|=P%]",
        help="Exit 1 when unjudged trials (invalid, or a tbflow error) exceed a threshold: bare = any; "
             "=N more than N; =P% more than P percent of recorded trials."),
    fail_on_flagged: str | None = typer.Option(
        None, FLAGGED, metavar="[=KIND,...]",
        help="Exit 1 when a trial is flagged: bare = tampering, broke-container or toolchain-changed; "
             "=KIND[,KIND] those kinds; =all every kind (agent-processes too)."),
    prices: Path | None = typer.Option(None, "--prices", metavar="FILE", dir_okay=False, help=PRICES_HELP),
    write: bool = typer.Option(True, "--write/--no-write",
                               help="Write report.md, report.html (+ report-trials/), junit.xml and results.json into the "
                                    "job directory."),
) -> None:
    """Re-render a job's reports from its records (no Docker needed); with --prices, price them first."""
    try:
        threshold = parse_threshold(fail_on_invalid) if fail_on_invalid is not None else None
        kinds = parse_kinds(fail_on_flagged) if fail_on_flagged is not None else None
        job = open_job(job_ref, "JOB_DIR")
        if job.warning:
            typer.echo(f"tbflow: warning: {job.warning}", err=True)
        job_dir = job.path
        store = job.mirror if is_url(job_ref) else None  # named by its URL: the store gets the reports too
        if prices is not None:
            _reprice(job_dir, prices)
        results = load_results(job_dir)
        if (job_dir / LOCK_NAME).is_file():  # a run died holding the job (or one runs): it may have left containers
            from tasks_lib.job.job_orphans import remove_orphans_quietly  # the Docker SDK: only then

            remove_orphans_quietly(job_dir, results.job.job_id)
        if write:
            write_reports(job_dir, results)
            if store is not None:
                store.push_top()
    except InputError as exc:
        raise _input_error(exc) from None
    _show(format, results, f"{store.describe() if store is not None else job_dir}" if write else None)
    tripped = False
    if threshold is not None:
        gate = check(threshold, results.total_invalid, results.total_trials, results.total_errors)
        typer.echo(("FAIL: " if gate.tripped else "ok: ") + gate.message, err=True)
        tripped = gate.tripped
    if kinds is not None:
        flagged = check_flags(kinds, [t.record for t in results.trials])
        typer.echo(("FAIL: " if flagged.tripped else "ok: ") + flagged.message, err=True)
        tripped = tripped or flagged.tripped
    if tripped:
        raise typer.Exit(1)


def diff(
    job_a: str = typer.Argument(..., help="Job A (the baseline): a job directory or a store URL.",
                                show_default=False),
    job_b: str = typer.Argument(..., help="Job B (compared with A): a job directory or a store URL.",
                                show_default=False),
    harness_a: str | None = typer.Option(None, "--harness-a", help="Harness of job A to compare."),
    harness_b: str | None = typer.Option(None, "--harness-b", help="Harness of job B to compare."),
    format: DiffFormat = typer.Option(DiffFormat.md, "--format", "-f", help="md (default) or json."),
    output: Path | None = typer.Option(None, "--output", "-o", help="Also write the diff to this file."),
) -> None:
    """Compare two jobs task by task: status, reward and invalid counts, plus a paired summary."""
    try:
        opened = [open_job(job_a, "JOB_A"), open_job(job_b, "JOB_B")]
        for job in opened:
            if job.warning:
                typer.echo(f"tbflow: warning: {job.warning}", err=True)
        d = diff_jobs(load_results(opened[0].path), load_results(opened[1].path), harness_a, harness_b)
    except InputError as exc:
        raise _input_error(exc) from None
    text = render_diff(d) if format is DiffFormat.md else d.model_dump_json(indent=2) + "\n"
    if output is not None:
        try:
            output.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise _input_error(InputError("--output", f"cannot write {output}: {exc.strerror or exc}")) from None
    typer.echo(text, nl=False)


def register(app: typer.Typer) -> None:
    """Add ``report`` and ``diff`` to ``app``."""
    app.command("report", cls=_OptionalValueCommand)(report)
    app.command("diff")(diff)
