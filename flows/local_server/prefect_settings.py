"""Defaults for Prefect's embedded local mode (and for CLI runs against a configured server), set
before Prefect is imported.

With no ``PREFECT_API_URL`` tbflow starts a local server per command (``flows.local_server.command_server``;
Prefect's own "ephemeral" mode, used by the tests' harness, does the same lazily). Measured here:
6–13 s to start, which is over Prefect's default 20 s startup budget on a busy 2-core machine,
and its console logging drowns the progress bar. Every value is only a default: a variable the
user already set wins.

The local server records task runs from events, by default one SQLite write per event. With 7
task runs per trial that cost ~0.55 CPU-s per trial in the server process on this 2-core machine
(py-spy: ``task_run_recorder`` flushes and SQLAlchemy compiling single-row inserts), CPU that
dockerd then lacks. Batching the recorder and the event persister cut it to ~0.2 CPU-s per trial
(bench/RESULTS.md); every task run is still recorded, with its final state, because both
services flush what they hold when the server stops (checked in the server's database after a
job).
"""

from __future__ import annotations

import os

DEFAULTS = {
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_BATCH_SIZE": "200",
}


#: The services tbflow's servers leave off (a command's own, and ``tbflow server start``'s). Nobody
#: reads their event feed and they have no automations (the zombie automation is a deployment
#: server's: deployments/crash-zombie-runs.yaml), so the services that store events and evaluate
#: triggers only cost CPU next to the trials: 0.175 → 0.135 CPU-s per trial over a 445-trial job
#: (bench/RESULTS.md, "The judge's cost"). Task runs are still recorded.
LEAN_SERVICES = {
    "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false",
}

#: How a command's own server process runs (``flows.local_server.server_main``): as Prefect runs its
#: ephemeral server (no UI, only the services a local run needs).
SERVER_ENV = {
    "PREFECT_UI_ENABLED": "0",
    "PREFECT__SERVER_EPHEMERAL": "1",
    "PREFECT__SERVER_FINAL": "1",
    **LEAN_SERVICES,
}

#: Embedded mode: nobody reads the temporary server's logs, so run loggers keep quiet (INFO lines
#: would cost server CPU). With a configured server (``PREFECT_API_URL``) the run's INFO logs go
#: to the server, where the UI shows them; only the console is kept to warnings, for the progress bar.
QUIET_EMBEDDED = {"PREFECT_LOGGING_LEVEL": "WARNING"}
QUIET_CONSOLE = {"PREFECT_LOGGING_HANDLERS_CONSOLE_LEVEL": "WARNING"}


def configure_embedded_prefect() -> None:
    quiet = QUIET_CONSOLE if os.environ.get("PREFECT_API_URL") else QUIET_EMBEDDED
    for key, value in {**DEFAULTS, **quiet}.items():
        os.environ.setdefault(key, value)


def no_heartbeats_on(server):  # noqa: ANN001, ANN201 (a CommandServer; a context manager)
    """Flow-run heartbeats off for a run against tbflow's own server, as they are for nothing there.

    Heartbeats let a server mark a flow run whose process died as crashed (the zombie automation
    of deployments/crash-zombie-runs.yaml). tbflow's servers (a command's own, and the one
    ``tbflow server start`` runs for this ``PREFECT_HOME``) have no such automation; the command's
    guard pipe does that job (flows/local_server/guard.py). Their cost is at the end:
    Prefect's heartbeat thread sleeps in 1-s steps and each flow run (the job, its trials and its
    report) joins it on exit, ~0.5 s per command here (bench/RESULTS.md, "Issue 32"). With any
    other server in ``PREFECT_API_URL``, heartbeats stay as Prefect sets them.
    """
    import contextlib

    if server is None or not getattr(server, "tbflows", False):
        return contextlib.nullcontext()
    import prefect.settings as settings

    return settings.temporary_settings(updates={settings.PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None})
