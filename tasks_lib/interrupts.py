"""A process-wide stop flag for trials running on worker threads.

Python delivers Ctrl-C (and Prefect's ``TerminationSignal`` on cancellation) only to the main
thread; trial threads keep going. When the job is stopping, the flow sets this flag and removes
the job's containers; every trial then raises ``Interrupted`` at its next check instead of
recording the resulting Docker errors as a finished (invalid) trial. An interrupted trial leaves
no record, so a resume runs it again.

A run that finds its job lock taken by another run (``lock_lost``) stops the same way: the flag,
then SIGINT to the main thread, so the job flow removes the job's containers and ends exactly as on
Ctrl-C, and the summary says why (``stop_reason``).
"""

from __future__ import annotations

import logging
import signal
import threading
from typing import Callable

from tasks_lib.errors import TbflowError

_stop = threading.Event()
_reason: str | None = None
_log = logging.getLogger(__name__)


class Interrupted(TbflowError):
    """The job is stopping; the trial must end without writing a record."""


def request_stop() -> None:
    _stop.set()


def clear() -> None:
    global _reason
    _reason = None
    _stop.clear()


def stop_reason() -> str | None:
    """Why the job is stopping when no signal asked it to (the lock was lost); None otherwise."""
    return _reason


def lock_lost(what: str, interrupt_main: Callable[[], None] | None = None) -> None:
    """The job's lock is another run's now: stop as Ctrl-C does, saying why.

    Sets the stop flag first (trial threads end unrecorded at their next check), then delivers
    SIGINT to the main thread (``signal.pthread_kill``: it wakes a blocking wait, and runs the
    command's stop handler, or raises ``KeyboardInterrupt`` in a flow run without one).
    ``interrupt_main`` replaces that delivery (tests).
    """
    global _reason
    if _stop.is_set():
        return
    _reason = f"the job's lock was lost: {what}"
    _log.error("stopping the job: %s", _reason)
    _stop.set()
    main = threading.main_thread().ident
    if interrupt_main is not None:
        interrupt_main()
    elif main is not None:
        signal.pthread_kill(main, signal.SIGINT)


def stopping() -> bool:
    return _stop.is_set()


def check() -> None:
    if _stop.is_set():
        raise Interrupted("the job is stopping")


def pause(seconds: float) -> None:
    """Wait ``seconds``, or less when the job starts stopping (then ``Interrupted``): a wait the
    task's own settings ask for (a healthcheck's interval) never delays Ctrl-C."""
    _stop.wait(seconds)
    check()
