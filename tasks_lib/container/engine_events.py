"""tbflow's own record of the engine's events for its containers, kept while trials run.

Whose doing a stopped trial container is (the agent killing PID 1, or a kill through the Docker
API) is read from the engine's events; but the engine keeps only its last 256 events for anyone
asking later, so on a busy engine a container's ``start`` and ``kill`` can be gone by the time a
trial asks (an agent that stopped its container late was then booked as an environment failure).
So each tbflow process follows the engine's event stream for containers labelled ``tbflow`` from
its first trial on and keeps each container's events until it is destroyed; a container whose
``start`` this record saw is judged from it, whatever the engine still remembers.
"""

from __future__ import annotations

import logging
import threading
import time

from tasks_lib.container.docker_client import DOCKER_ERRORS, LABEL_ROOT, get_client

_log = logging.getLogger(__name__)
#: events kept per container (a trial's container has a handful besides its execs)
PER_CONTAINER = 200
KEPT_ACTIONS = ("create", "start", "kill", "stop", "pause", "unpause", "restart", "die", "oom", "destroy")


class EngineEvents:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._events: dict[str, list[dict]] = {}
        self._thread: threading.Thread | None = None
        self._ready = threading.Event()

    def watch(self) -> None:
        """Start following the engine (once per process); returns once the stream is open."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._follow, name="tbflow-engine-events", daemon=True)
                self._thread.start()
        self._ready.wait(10)

    def seen(self, container_id: str) -> list[dict] | None:
        """The container's events since its ``start``, or None when this record did not see it start."""
        with self._lock:
            events = list(self._events.get(container_id, []))
        return events if any(e.get("Action") == "start" for e in events) else None

    def _follow(self) -> None:
        since = int(time.time()) - 1
        while True:
            try:
                stream = get_client().api.events(since=since, decode=True,
                                                 filters={"type": "container", "label": LABEL_ROOT})
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
        if not cid or action not in KEPT_ACTIONS:
            return
        with self._lock:
            if action == "destroy":
                self._events.pop(cid, None)
                return
            kept = self._events.setdefault(cid, [])
            if not any(e is event or (e.get("timeNano") and e.get("timeNano") == event.get("timeNano")) for e in kept):
                kept.append(event)
            del kept[:-PER_CONTAINER]


ENGINE_EVENTS = EngineEvents()
