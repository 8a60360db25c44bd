"""The engine's container create/destroy events of one job, streamed live while a test acts.

Why not ``client.events(since=..., until=...)`` after the fact: the engine keeps only its last
256 events in memory, and every exec of every container on the machine is an event, so with
pytest-xdist workers (or a benchmark) beside the test the window is gone by the time the test
asks, and a check for "no container created" passes on an empty answer. A stream opened before
the action sees every event as it happens.

``with JobContainerEvents(client, job_dir=...) as seen: run(); seen.created`` waits, on exit, until
every container it saw created was also destroyed (tbflow removes a job's containers before it
returns), so no create event is still on its way when the test reads ``created``. With
``execs=True`` it also sees each exec start (``exec_started``), the moment a stage begins inside a
container, without a ``docker exec`` poll that a loaded machine makes miss a short stage.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path

from tasks_lib.container.docker_client import LABEL_JOB, LABEL_JOB_DIR, LABEL_TRIAL


class JobContainerEvents:
    def __init__(self, client, *, job_dir: Path | None = None, job_id: str | None = None,
                 settle_sec: float = 60, execs: bool = False) -> None:
        label = f"{LABEL_JOB_DIR}={Path(job_dir).resolve()}" if job_dir is not None else f"{LABEL_JOB}={job_id}"
        events = ["create", "destroy"] + (["exec_start"] if execs else [])
        self._filters = {"type": "container", "event": events, "label": label}
        self._client, self._settle = client, settle_sec
        self._events: list[dict] = []
        self._lock = threading.Condition()

    def __enter__(self) -> "JobContainerEvents":
        self._stream = self._client.api.events(decode=True, filters=self._filters)
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()
        return self

    def _read(self) -> None:
        try:
            for event in self._stream:
                with self._lock:
                    self._events.append(event)
                    self._lock.notify_all()
        except Exception:  # noqa: BLE001 - the stream was closed by __exit__
            pass

    def _ids(self, action: str) -> set[str]:
        return {e["Actor"]["ID"] for e in self._events if e.get("Action") == action}

    def __exit__(self, *exc: object) -> None:
        deadline = time.monotonic() + (self._settle if exc[0] is None else 0)
        with self._lock:
            while not self._ids("create") <= self._ids("destroy") and time.monotonic() < deadline:
                self._lock.wait(0.5)
        self._stream.close()
        self._thread.join(5)

    def exec_started(self, trial: str, command_part: str) -> bool:
        """Whether an exec whose command line contains ``command_part`` started in ``trial``'s
        container (needs ``execs=True``; the action reads ``exec_start: <command line>``)."""
        with self._lock:
            return any(e.get("Action", "").startswith("exec_start:") and command_part in e["Action"]
                       and e["Actor"]["Attributes"].get(LABEL_TRIAL) == trial for e in self._events)

    @property
    def created(self) -> list[dict]:
        """The create events' attributes (labels and name), in the order they came."""
        with self._lock:
            return [e["Actor"]["Attributes"] for e in self._events if e.get("Action") == "create"]
