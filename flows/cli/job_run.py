"""The job flow of a started ``tbflow run``/``resume`` (flows/cli/job_start.py), with a progress bar;
how a failure or a signal during the run ends the command."""

from __future__ import annotations

import signal
from pathlib import Path

from prefect.exceptions import TerminationSignal

from flows.cli.console import RichProgress
from flows.cli.job_start import Started, refuse, refusal_of, release, stopped
from flows.cli.stopping import StopHandlers
from flows.job import progress
from flows.job.job_result import JobResult
from flows.job.job_verdict import InvalidTrialsGate, NotAllScored
from flows.job_flow import job_flow
from flows.local_server.prefect_settings import no_heartbeats_on


def run_flow(started: Started, stop: StopHandlers) -> tuple[JobResult, str | None]:
    """The job flow's result and the gate's message (None unless --fail-on-invalid tripped)."""
    server = started.server
    assert server is not None, "a started job has its server"

    def job_dir_in_use(job_dir: str) -> None:  # the flow names an unnamed job itself
        server.watch_job_dir(job_dir)
        stop.job_dir = Path(job_dir)

    listener = RichProgress(on_job_dir=job_dir_in_use)
    progress.set_listener(listener)
    try:
        with no_heartbeats_on(server):
            return job_flow(**started.config.flow_parameters()), None
    except InvalidTrialsGate as exc:  # --fail-on-invalid tripped: the job ran; show it, then exit 1
        return exc.result, str(exc)
    except NotAllScored as exc:  # the run is red in Prefect; the command shows the results (exit 0)
        return exc.result, None
    except BaseException as exc:
        found = refusal_of(exc, started.config, starting=False)
        if found is not None:
            refuse(*found)
        if stop.signum is None and not isinstance(exc, (KeyboardInterrupt, TerminationSignal)):
            raise
        listener.job_finished()
        if stop.signum is None:  # Prefect turned a SIGTERM into TerminationSignal and did not re-send it
            stop.signum = signal.SIGTERM
        stopped(stop, started.planned)
        raise
    finally:
        progress.set_listener(None)
        release(started.lock)
