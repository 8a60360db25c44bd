"""What the job dir's lock and the store's lock share: re-entrance within a process and a heartbeat
that notices the lock was lost.

Re-entrant: the CLI takes a job's lock before the job flow, which takes it again when it runs on
its own (a deployment); the second acquire in one process counts up instead of being refused, and
only the last release lets go.

Lost: a holder that finds another holder's lock in its place (another machine judged it dead)
must not go on writing the same records and removing the other run's containers on name
conflicts. The heartbeat calls ``on_lost`` once with what it found; a job run passes
``tasks_lib.interrupts.lock_lost``, which stops it as Ctrl-C does.
"""

from __future__ import annotations

import logging
import threading
from typing import Callable, ClassVar, TypeVar

_log = logging.getLogger(__name__)
L = TypeVar("L", bound="Reentrant")
#: called once, from the heartbeat thread, with a one-line account of who holds the lock now
OnLost = Callable[[str], None]


class Reentrant:
    """Counts the acquires of one lock (by class and key) within this process."""

    _registry: ClassVar[dict[tuple[str, str], "Reentrant"]] = {}
    _guard: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self) -> None:
        self._key = ""
        self._count = 0
        self._stop = threading.Event()
        self.on_lost: OnLost | None = None

    @classmethod
    def _shared(cls: type[L], key: str, take: Callable[[], L], on_lost: OnLost | None) -> L:
        """The lock this process already holds under ``key``, else the one ``take()`` acquires."""
        with Reentrant._guard:
            lock = Reentrant._registry.get((cls.__name__, key))
            if lock is None:
                lock = take()
                lock._key = key
                Reentrant._registry[(cls.__name__, key)] = lock
            lock._count += 1
            if on_lost is not None and lock.on_lost is None:
                lock.on_lost = on_lost
            return lock  # type: ignore[return-value]

    @property
    def fresh(self) -> bool:
        """True for the outermost acquire in this process."""
        return self._count == 1

    def _last_release(self) -> bool:
        """Count one release down; True when it was the last (the caller then lets go)."""
        with Reentrant._guard:
            self._count -= 1
            if self._count > 0:
                return False
            Reentrant._registry.pop((type(self).__name__, self._key), None)
        self._stop.set()
        return True

    def _start_heartbeat(self, name: str, period: Callable[[], float], beat: Callable[[], str | None]) -> None:
        """Run ``beat`` every ``period()`` seconds until released; it returns None while the lock is
        ours, else who holds it now, which ends the beats and is reported to ``on_lost``."""

        def loop() -> None:
            while not self._stop.wait(period()):
                lost = beat()
                if lost is None:
                    continue
                if self._stop.is_set():
                    return  # released meanwhile: a lock we let go of is not lost
                _log.error("%s is no longer ours: %s", name, lost)
                if self.on_lost is not None:
                    self.on_lost(f"{name} was taken over: {lost}")
                return

        threading.Thread(target=loop, name=f"lock-heartbeat-{name}", daemon=True).start()

    def __enter__(self: L) -> L:
        return self

    def __exit__(self, *exc) -> None:  # noqa: ANN002
        self.release()

    def release(self) -> None:  # pragma: no cover - each lock defines it
        raise NotImplementedError
