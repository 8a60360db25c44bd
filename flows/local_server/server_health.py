"""Waiting for a Prefect server a tbflow command depends on, whoever started it.

One loop, for a command's own server (flows/local_server/command_server.py) and ``tbflow server
start``: poll ``/health`` until it
answers 200, fail at once when the process that should answer is gone, and after ``timeout``
seconds.
"""

from __future__ import annotations

import time
import urllib.error
import urllib.request
from collections.abc import Callable

POLL_SEC = 0.05


def wait_healthy(api_url: str, timeout: float, gone: Callable[[], str | None], late: str) -> None:
    """Return once ``api_url`` answers ``/health``; ``RuntimeError`` with ``gone()``'s text when
    it returns one (the server died), or with ``late`` after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{api_url}/health", timeout=2) as resp:
                if resp.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if (why := gone()) is not None:
            raise RuntimeError(why)
        if time.monotonic() > deadline:
            raise RuntimeError(late)
        time.sleep(POLL_SEC)
