"""tbflow's own record of the engine's events for its containers, kept while trials run.

Whose doing a stopped trial container is (the agent killing PID 1, or a kill through the Docker
API) is read from the engine's events; but the engine keeps only its last 256 events for anyone
asking later, so on a busy engine a container's ``start`` and ``kill`` can be gone by the time a
trial asks (an agent that stopped its container late was then booked as an environment failure).
So each tbflow process follows the engine's event stream for containers labelled ``tbflow`` from
its first trial on and keeps each container's events until it is destroyed; a container whose
``start`` this record saw is judged from it, whatever the engine still remembers.

Each kind of event is bounded on its own (its first and its last ``PER_ACTION``): an agent whose
children are OOM-killed by the thousand floods the record with ``oom``, and one shared bound let
that flood push the container's ``start`` out, so the agent killing its own PID 1 afterwards was
booked as an environment failure. Lifecycle events are few (a restart loop is the most there
can be, and its first and latest are what a verdict needs); what a bound left out is counted
(``dropped``) so evidence can still say how many there were.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections import Counter, deque
from collections.abc import Callable
from dataclasses import dataclass, field

from tasks_lib.container.docker_client import DOCKER_ERRORS, LABEL_ROOT, get_client

_log = logging.getLogger(__name__)
#: the last events kept of each kind per container, besides its first (a trial's container has a
#: handful of each; only ``oom`` comes in floods, and a flood of one kind cannot evict another)
PER_ACTION = 100
LIFECYCLE_ACTIONS = ("create", "start", "kill", "stop", "pause", "unpause", "restart", "die", "destroy")
KEPT_ACTIONS = (*LIFECYCLE_ACTIONS, "oom")
#: an exec's end: wakes whoever polls that exec (``ExecEnd``), not kept as a container's evidence
EXEC_DIE = "exec_die"
#: exec ends remembered for a poll that starts after the event came (a command that ends at once)
EXEC_ENDS_KEPT = 4096


@dataclass
class _Kept:
    """One container's kept events, as (arrival number, event): the first and the last
    ``PER_ACTION`` of each kind, and how many of each kind were left out between them."""

    first: dict[str, tuple[int, dict]] = field(default_factory=dict)
    last: dict[str, deque[tuple[int, dict]]] = field(default_factory=dict)
    dropped: Counter[str] = field(default_factory=Counter)

    def has(self, action: str, event: dict) -> bool:
        """Whether ``event`` is kept already: a stream followed again from its last second
        delivers that second's events twice."""
        nano = event.get("timeNano")
        kept = [*([self.first[action]] if action in self.first else []), *self.last.get(action, ())]
        return any(e is event or (nano and e.get("timeNano") == nano) for _, e in kept)

    def add(self, action: str, seq: int, event: dict) -> None:
        if action not in self.first:
            self.first[action] = (seq, event)
            return
        last = self.last.setdefault(action, deque())
        last.append((seq, event))
        if len(last) > PER_ACTION:
            last.popleft()
            self.dropped[action] += 1

    def events(self) -> list[dict]:
        kept = [*self.first.values(), *itertools.chain.from_iterable(self.last.values())]
        return [e for _, e in sorted(kept, key=lambda pair: pair[0])]


class EngineEvents:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, _Kept] = {}
        self._arrivals = itertools.count()
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()
        #: exec id -> its exit code as the engine's event gives it (None if it gives none);
        #: insertion-ordered, the oldest dropped first
        self._exec_ended: dict[str, int | None] = {}
        self._exec_waiters: dict[str, threading.Event] = {}

    def watch(self) -> None:
        """Start following the engine (once per process); returns once the stream is open."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._follow, name="tbflow-engine-events", daemon=True)
                self._thread.start()
        self._ready.wait(10)

    def seen(self, container_id: str) -> list[dict] | None:
        """The container's kept events in the order they happened (its first ``start``, its latest
        events of each kind), or None when this record did not see it start."""
        with self._lock:
            kept = self._events.get(container_id)
            events = kept.events() if kept is not None else []
        return events if any(e.get("Action") == "start" for e in events) else None

    def dropped(self, container_id: str) -> dict[str, int]:
        """How many events of each kind ``seen`` leaves out for the container (e.g. ``{"oom": 4800}``)."""
        with self._lock:
            kept = self._events.get(container_id)
            return dict(kept.dropped) if kept is not None else {}

    def exec_end(self, exec_id: str) -> "ExecEnd":
        """What a poll of ``exec_id`` waits on between two looks: the engine's ``exec_die`` for it
        (at once if it came already), or plain time when this process follows no stream."""
        if self._thread is None:
            return ExecEnd(None, lambda: None)
        with self._lock:
            woken = self._exec_waiters.setdefault(exec_id, threading.Event())
            if exec_id in self._exec_ended:
                woken.set()

        def forget() -> None:
            with self._lock:
                self._exec_waiters.pop(exec_id, None)

        def exit_code() -> int | None:
            with self._lock:
                return self._exec_ended.get(exec_id)
        return ExecEnd(woken, forget, exit_code)

    def _exec_died(self, event: dict) -> None:
        attributes = (event.get("Actor") or {}).get("Attributes") or {}
        exec_id = str(attributes.get("execID") or "")
        if not exec_id:
            return
        code = str(attributes.get("exitCode", ""))
        with self._lock:
            self._exec_ended[exec_id] = int(code) if code.lstrip("-").isdigit() else None
            if len(self._exec_ended) > EXEC_ENDS_KEPT:
                del self._exec_ended[next(iter(self._exec_ended))]
            if (woken := self._exec_waiters.get(exec_id)) is not None:
                woken.set()

    def _follow(self) -> None:
        since = int(time.time()) - 1
        while True:
            try:
                # only the kept kinds: a trial's execs and archive copies are as many events again,
                # each read and decoded here for nothing
                stream = get_client().api.events(since=since, decode=True, filters={
                    "type": "container", "label": LABEL_ROOT, "event": [*KEPT_ACTIONS, EXEC_DIE]})
                self._ready.set()
                for event in stream:
                    since = int(event.get("time", since))
                    self._keep(event)
            except DOCKER_ERRORS as exc:  # an engine restarting, or an idle stream timing out: follow again
                _log.debug("engine event stream ended: %s", exc)
            self._ready.set()
            time.sleep(1)

    def _keep(self, event: dict) -> None:
        action = str(event.get("Action", "")).split(":")[0]
        cid = event.get("id") or event.get("Actor", {}).get("ID")
        if action == EXEC_DIE:
            self._exec_died(event)
            return
        if not cid or action not in KEPT_ACTIONS:
            return
        with self._lock:
            if action == "destroy":
                self._events.pop(cid, None)
                return
            kept = self._events.setdefault(cid, _Kept())
            if not kept.has(action, event):
                kept.add(action, next(self._arrivals), event)


@dataclass
class ExecEnd:
    """A pause between two looks at an exec that ends early when the engine says the exec ended.

    Polling alone cost a Docker call every 0.25 s for as long as an agent ran and found a quick
    command's end up to half its run late; the event makes the end seen at once, and the looks
    rarer. The event's exit code (Docker 25 and later put it in ``exec_die``) is the engine's
    own record of the exec, as a look would read it, so a poller takes it without asking again
    (two Docker calls fewer per exec). Without it the look stays the authority: an event can be
    missed while the stream reconnects, and an older engine's event names no code."""

    woken: threading.Event | None
    forget: Callable[[], None]
    _exit_code: Callable[[], int | None] = lambda: None
    _fired: bool = False

    @property
    def live(self) -> bool:
        """Whether the engine's events wake this pause (else it is plain time)."""
        return self.woken is not None

    def exit_code(self) -> int | None:
        """The exec's exit code from the engine's ``exec_die`` event, once that came with one."""
        return self._exit_code()

    def pause(self, seconds: float) -> None:
        """Wait ``seconds``, or until the exec's end is reported; that wakes one pause only, so a
        look that still shows the exec running (the event can come first) is not a busy loop."""
        if self.woken is None or self._fired:
            time.sleep(seconds)
        elif self.woken.wait(seconds):
            self._fired = True

    def __enter__(self) -> "ExecEnd":
        return self

    def __exit__(self, *exc: object) -> None:
        self.forget()


ENGINE_EVENTS = EngineEvents()
