"""Defaults for Prefect's embedded local mode, set before Prefect is imported.

With no ``PREFECT_API_URL`` Prefect starts a temporary local server per process (its "ephemeral"
mode). Measured here: 6–13 s to start, which is over Prefect's default 20 s startup budget on a
busy 2-core machine, and its console logging drowns the progress bar. Every value is only a
default: a variable the user already set wins.
"""

from __future__ import annotations

import os

DEFAULTS = {
    "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS": "90",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "PREFECT_LOGGING_LEVEL": "WARNING",
}


def configure_embedded_prefect() -> None:
    for key, value in DEFAULTS.items():
        os.environ.setdefault(key, value)
