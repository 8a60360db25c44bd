"""A process-wide stop flag for trials running on worker threads.

Python delivers Ctrl-C (and Prefect's ``TerminationSignal`` on cancellation) only to the main
thread; trial threads keep going. When the job is stopping, the flow sets this flag and removes
the job's containers; every trial then raises ``Interrupted`` at its next check instead of
recording the resulting Docker errors as a finished (invalid) trial. An interrupted trial leaves
no record, so a resume runs it again.
"""

from __future__ import annotations

import threading

from tasks_lib.errors import TbflowError

_stop = threading.Event()


class Interrupted(TbflowError):
    """The job is stopping; the trial must end without writing a record."""


def request_stop() -> None:
    _stop.set()


def clear() -> None:
    _stop.clear()


def stopping() -> bool:
    return _stop.is_set()


def check() -> None:
    if _stop.is_set():
        raise Interrupted("the job is stopping")
