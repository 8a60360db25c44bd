"""What the CLI shows: a live progress bar while the job runs, then the trial table and summary.

Invalid trials are shown with their kind and reason and are never part of the mean.

Text from records (reasons, task names, flag messages) is printed as ``rich.text.Text`` with
``visible`` escapes: never read as Rich markup (a reason holding ``[/]`` would raise) and never
sent raw to the terminal (an ``ESC]52`` from the container would write the clipboard).

The Rich consoles are built where they are used, never at import: a Rich console decides
at construction whether its file is a terminal, its colours and its width (``NO_COLOR``,
``FORCE_COLOR``, ``TERM``, ``COLUMNS``), so a console built at import would miss a change made
after it (a test's ``NO_COLOR``, a redirected stream).
"""

from __future__ import annotations

import time

from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, ProgressColumn, TaskID, TextColumn,
                           TimeElapsedColumn)
from rich.table import Column, Table
from rich.text import Text

from flows.cli.result_lines import summary_lines
from flows.job.progress import describe
from tasks_lib.job.eta import TrialClock
from tasks_lib.records.record_models import TrialOrder, TrialRecord
from tasks_lib.job.trial_order import describe_order
from tasks_lib.store.remote_store import is_url, mirror_for
from tasks_lib.text_clean import shorten, visible

ORDER_LINES = 12
REASON_CHARS = 160
_STATUS = {"scored": "[green]scored[/green]", "invalid": "[red]invalid[/red]", "error": "[bold red]tbflow error[/bold red]"}


class NowColumn(ProgressColumn):
    """The ETA and the trials running now (``tasks_lib/job/eta.py``), worked out at each refresh."""

    def __init__(self, clock: TrialClock) -> None:
        # one line whatever the width: cut with an ellipsis (a wrapped line pushed the bar out at 80)
        super().__init__(table_column=Column(no_wrap=True, overflow="ellipsis", max_width=38))
        self.clock = clock

    def render(self, task) -> Text:  # noqa: ANN001 - Rich's Task
        return Text(visible(self.clock.describe(time.monotonic(), limit=2)), style="dim", no_wrap=True,
                    overflow="ellipsis")


class RichProgress:
    def __init__(self, on_job_dir=None) -> None:
        self._progress: Progress | None = None
        self._task: TaskID | None = None
        self._on_job_dir = on_job_dir  # told the job directory in use (for stopping cleanly)
        self._console = Console(stderr=True)
        self.clock = TrialClock()

    def job_started(self, job_dir: str, total: int, already_done: int) -> None:
        if self._on_job_dir is not None:
            self._on_job_dir(job_dir)
        mirror = mirror_for(job_dir)  # a job in a store: its URL and this machine's working copy
        where = escape(visible(mirror.describe() if mirror else job_dir))
        self._console.print(f"[bold]tbflow[/bold] job {where}: {total} trials"
                      + (f" ({already_done} already recorded, kept)" if already_done else ""))
        self._progress = Progress(TextColumn("{task.description}"), BarColumn(bar_width=20), MofNCompleteColumn(),
                                  TimeElapsedColumn(), NowColumn(self.clock), console=self._console, transient=True,
                                  # twice a second shows the seconds; Rich's 10 redraws (and none when the
                                  # output is no terminal, where nothing is drawn) cost ~1 ms of CPU a trial
                                  refresh_per_second=2, auto_refresh=self._console.is_terminal)
        self._progress.start()
        self._task = self._progress.add_task("trials", total=total, completed=already_done)

    def trial_started(self, trial_id: str) -> None:
        self.clock.started(trial_id, time.monotonic())

    def order_planned(self, order: TrialOrder) -> None:
        """The start order, first ``ORDER_LINES`` trials (all of it is in job.json)."""
        self.clock.planned(order)
        target = self._progress.console if self._progress is not None else self._console
        target.print("\n".join(describe_order(order, ORDER_LINES)), markup=False, highlight=False)

    def trial_finished(self, record: TrialRecord, done: int, total: int) -> None:
        self.clock.ended(record.trial_id, time.monotonic())
        if self._progress is not None and self._task is not None:
            self._progress.console.print("  " + describe(record), markup=False, highlight=False)
            self._progress.update(self._task, completed=done)

    def trial_interrupted(self, trial_id: str, message: str) -> None:
        self.clock.ended(trial_id, time.monotonic())
        if self._progress is not None:
            self._progress.console.print(f"  {trial_id}: not recorded ({visible(message.strip())})",
                                         markup=False, highlight=False)

    def job_finished(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None


def print_results(result) -> None:
    out = Console()
    records: list[TrialRecord] = result.records
    table = Table(title=f"job {result.job_name}", show_lines=False)
    for col in ("task", "harness", "#", "status"):  # never split: only the reason column gives way
        table.add_column(col, no_wrap=True)
    table.add_column("reward or invalid reason", overflow="fold", ratio=1, min_width=16)
    table.add_column("time", no_wrap=True, justify="right")
    for r in records:
        v = r.validity
        reason = shorten(visible((v.reason or "").strip()), REASON_CHARS)
        detail = f"{v.reward:g}" if v.status == "scored" else f"{v.kind or 'tbflow'}: {reason}"
        if r.flags:
            detail += " (flagged: " + "; ".join(f.kind for f in r.flags) + ")"
        table.add_row(_plain(r.spec.task_name), _plain(r.spec.harness), str(r.spec.attempt), _STATUS[v.status],
                      _plain(detail), f"{r.duration_sec:.1f}s")
    out.print(table)
    for line in summary_lines(records) or ["no trials recorded"]:
        out.print(_plain(line))
    errors = [r.trial_id for r in records if r.validity.status == "error"]
    if errors:
        out.print(f"[bold red]tbflow errors[/bold red]: {len(errors)} trial(s) ended by a bug in tbflow "
                  f"(see error.txt in each; resume runs them again): {', '.join(errors)}")
    for p in result.task_problems:
        out.print(Text.assemble(("task not loaded", "yellow"), " ", _plain(f"{p.name}: {p.where}: {p.message}")))
    for p in result.task_notes:
        out.print(Text.assemble(("task note", "yellow"), " ", _plain(f"{p.name}: {p.message}")))
    if result.unfinished:
        out.print(f"[yellow]not recorded[/yellow]: {', '.join(result.unfinished)} (run again with "
                  f"--job-name {result.job_name} to finish them)")
    out.print(f"job directory: {result.job_dir} (report.md, report.html, junit.xml, results.json)")
    if result.location and is_url(result.location):
        out.print(f"job store: {result.location}")


def _plain(text: str) -> Text:
    """Record text for a Rich table or line: visible escapes, no markup, no highlighting."""
    return Text(visible(text))
