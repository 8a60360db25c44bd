"""The slow side held, not timed: a stage that waits for a marker file (``until [ -e /tmp/go ]``)
goes on only once the test creates that file in its container.

A fixed sleep is a race on a loaded machine (a 20-s stage ended and was recorded before a Ctrl-C
reached it; a 4-s night ended before an overlapping run was created). ``MarkerWriter`` creates
``markers`` (in order, one ``touch``) from a thread in every running container that has the
label ``label`` and whose labels ``wanted`` accepts (only those: the machine may run others), from ``start()`` until ``stop()``, or until the first success when ``once``.
Listing uses the engine's plain listing, not the SDK's (which inspects each container and fails
when one is removed in between).
"""

from __future__ import annotations

import threading
from typing import Callable

from docker.errors import APIError


class MarkerWriter:
    def __init__(self, client, label: str, wanted: Callable[[dict], bool], markers: tuple[str, ...], *,
                 once: bool = False) -> None:
        self._api, self._label, self._wanted = client.api, label, wanted
        self._markers, self._once = markers, once
        self._done = threading.Event()
        self.released = threading.Event()  # a marker set was created at least once
        self._thread: threading.Thread | None = None

    def start(self) -> "MarkerWriter":
        if self._markers and self._thread is None:
            self._thread = threading.Thread(target=self._run, daemon=True)
            self._thread.start()
        return self

    def stop(self) -> None:
        self._done.set()

    def __enter__(self) -> "MarkerWriter":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _run(self) -> None:
        while not self._done.is_set():
            try:
                for c in self._api.containers(filters={"label": self._label}):
                    if not self._wanted(c.get("Labels") or {}):
                        continue
                    exec_id = self._api.exec_create(c["Id"], ["touch", *self._markers])
                    self._api.exec_start(exec_id)
                    if self._api.exec_inspect(exec_id)["ExitCode"] == 0:
                        self.released.set()
                        if self._once:
                            return
            except APIError:  # not running yet, or already gone: the next round
                pass
            self._done.wait(0.1)
