"""How a tbflow command stops on Ctrl-C, SIGTERM and SIGHUP (docs/running-jobs.md, "Stopping").

The first signal stops the job the way Ctrl-C always did: it is raised in the main thread as
``Stop`` (a ``KeyboardInterrupt``), the job flow raises the stop flag, removes the job's
containers and ends; the CLI prints one summary (recorded, interrupted, the resume command) and
exits 128 + the signal number. A SIGTERM that arrives while Prefect's engine runs the flow is
turned into Prefect's ``TerminationSignal`` by Prefect itself first (the run is marked crashed);
Prefect then re-sends it to this handler, so it ends the same way.

A second signal stops at once: the job's containers are removed by label (the job directory,
announced to the server's guard as well), then the process exits without waiting for trial
threads or for Prefect.

The handlers are installed even when SIGINT arrives ignored (a job started in the background by
a non-interactive shell): an explicit ``kill -INT`` or ``os.killpg`` is a request to stop, and
the embedded server no longer shares tbflow's process group, so only tbflow receives it.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from pathlib import Path
from typing import Any

from tasks_lib import interrupts
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Stop(KeyboardInterrupt):
    """The job was asked to stop by a signal; ``signum`` says which."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


class StopHandlers:
    """Installs the handlers for the duration of a job (a context manager)."""

    def __init__(self) -> None:
        self.signum: int | None = None
        self.job_dir: Path | None = None
        self._previous: dict[int, Any] = {}

    def __enter__(self) -> "StopHandlers":
        for sig in SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def quiet_prefect_console(self) -> None:
        """From the moment the job is stopping, Prefect's console handlers drop their records.

        Every interrupted task run would otherwise print its ``Interrupted`` traceback and the
        flow run a "Crash detected!" line above the summary. The records still reach the
        Prefect API (its handlers are not console handlers). Call after Prefect is imported.
        Also, always: the engine's ERROR line for an invalid trial's task run ("Finished in state
        Invalid(...)", a Failed state; "Finished Invalid: ..." once the job flow made it readable)
        says what the progress line above it says already.
        """
        loggers = [logging.getLogger()] + [logging.getLogger(n) for n in list(logging.root.manager.loggerDict)
                                           if n.startswith("prefect")]
        for lg in loggers:
            for h in lg.handlers:
                if isinstance(h, logging.StreamHandler) and _STOPPING_FILTER not in h.filters:
                    h.addFilter(_STOPPING_FILTER)
                    h.addFilter(_not_a_verdict_line)

    def __exit__(self, *exc) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)

    @property
    def exit_code(self) -> int:
        return 128 + (self.signum or signal.SIGINT)

    def _handle(self, signum: int, frame) -> None:  # noqa: ANN001
        if self.signum is None:
            self.signum = signum
            interrupts.request_stop()
            raise Stop(signum)
        self._stop_now(signum)

    def _stop_now(self, signum: int) -> None:
        """Second signal: remove the job's containers and exit, skipping every wait."""
        _say(f"tbflow: {signal.Signals(signum).name} again: removing containers and exiting now")
        if self.job_dir is not None:
            try:
                from tasks_lib.container.docker_client import LABEL_JOB_DIR
                from tasks_lib.container.container_removal import remove_job_containers

                remove_job_containers(str(self.job_dir.resolve()), label=LABEL_JOB_DIR)
            except Exception:  # noqa: BLE001 - the guard and the next run remove them by label
                pass
        from flows.local_server import command_server
        server = command_server.current()
        if server is not None:
            server.stop(clean=False, wait=False)  # it stops by itself at the pipe's end
        os._exit(self.exit_code)


def _not_stopping(record: logging.LogRecord) -> bool:
    return not interrupts.stopping()


_STOPPING_FILTER = _not_stopping


def _not_a_verdict_line(record: logging.LogRecord) -> bool:
    return not (record.name == "prefect.task_runs"  # as Prefect writes it, or as flows/job/run_ui.py rewrites it
                and record.getMessage().startswith(("Finished in state Invalid(", "Finished Invalid:")))


def stop_summary(job_dir: Path | None, signum: int, all_trials: list[str], resume_cmd: str,
                 reason: str | None = None) -> str:
    """One short paragraph: what is recorded, what was interrupted, how to continue. ``reason``
    replaces the signal's name when the job stopped itself (``interrupts.stop_reason``)."""
    cause = f"stopped by {signal.Signals(signum).name}" if reason is None else f"stopped because {reason}"
    if job_dir is None or not all_trials:
        return f"tbflow: {cause} before any trial started; nothing was recorded."
    recorded = [t for t in all_trials if (job_dir / "trials" / t / "trial.json").is_file()]
    missing = [t for t in all_trials if t not in set(recorded)]
    shown = ", ".join(missing[:5]) + (f" and {len(missing) - 5} more" if len(missing) > 5 else "")
    lines = [f"tbflow: {cause}: {len(recorded)} of {len(all_trials)} trials recorded in {job_dir}."]
    if missing:
        lines.append(f"  not recorded (interrupted or not started, containers removed): {shown}")
        lines.append(f"  resume with: {resume_cmd}")
    return "\n".join(lines)


def _say(text: str) -> None:
    """Print to stderr, never raising (after SIGHUP the terminal may be gone)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
