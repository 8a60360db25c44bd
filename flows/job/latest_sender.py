"""Send only the latest of a stream of updates, on a thread of its own.

The job's progress artifact is updated as each trial starts and ends. Each update is a call to
the Prefect API (~20–30 ms), and it was made on the thread that starts the next trial, so every
trial's start waited for the previous one's artifact update (bench/RESULTS.md, "Cold start").
A progress view needs only the newest state, so updates are handed to one sender thread that
sends the newest value and drops those it superseded, at most one send per ``min_interval``
(each send is a write on the Prefect server too: at a trial's start and end, that was ~9 ms of
CPU per trial over a 445-trial job); ``close()`` sends what is pending at once, before the job's
reports are made, so the artifact's final state is exact.

The thread runs in a copy of the caller's context (Prefect's settings and run context are
context variables, which a new thread would not see).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")
_NOTHING = object()


class LatestSender(Generic[T]):
    """``put(value)`` returns at once; ``send(value)`` runs on the sender thread, one at a time,
    with the newest value put since the last send, at most once per ``min_interval`` seconds.
    ``send`` must not raise (it is the caller's to log); ``close()`` sends the pending value at
    once, then stops the thread."""

    def __init__(self, send: Callable[[T], None], name: str, min_interval: float = 0.0) -> None:
        self._send = send
        self._min_interval = min_interval
        self._cond = threading.Condition()
        self._pending: object = _NOTHING
        self._busy = False
        self._closed = False
        context = contextvars.copy_context()
        self._thread = threading.Thread(target=context.run, args=(self._loop,), name=name, daemon=True)
        self._thread.start()

    def put(self, value: T) -> None:
        with self._cond:
            self._pending = value
            self._cond.notify_all()

    def flush(self, timeout: float = 30.0) -> bool:
        """Wait until everything put so far was sent; False if ``timeout`` passed first."""
        with self._cond:
            return self._cond.wait_for(lambda: self._pending is _NOTHING and not self._busy, timeout)

    def close(self, timeout: float = 30.0) -> None:
        """Send what is pending now (not after ``min_interval``), then stop the thread."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join(timeout)

    def _loop(self) -> None:
        while True:
            with self._cond:
                self._cond.wait_for(lambda: self._pending is not _NOTHING or self._closed)
                if self._pending is _NOTHING:
                    return  # closed, nothing left to send
                value, self._pending, self._busy = self._pending, _NOTHING, True
            try:
                self._send(value)  # type: ignore[arg-type]  # a T: only put() fills _pending
            except Exception:  # noqa: BLE001, S110 - ``send`` logs its own failures; the thread lives on
                pass
            finally:
                with self._cond:
                    self._busy = False
                    self._cond.notify_all()
                    self._cond.wait_for(lambda: self._closed, self._min_interval)  # newer values gather
