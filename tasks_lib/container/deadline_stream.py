"""Consume a streaming Docker API call (build, pull) under a deadline that really stops it.

Closing the SDK's response generator from another thread raises ``ValueError: generator already
executing`` and leaves the operation running in the daemon. What works (measured on Docker 20.10
with the classic builder): run the call on a client of its own, catch its HTTP response with a
``requests`` response hook, and at the deadline shut that response's socket down. The reader
thread then fails at once, and the daemon sees the client go away and cancels the operation — for
a build it stops the ``RUN`` step and removes its container (``forcerm``) — as moby does for a
``docker build`` whose client was interrupted.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any

import docker

from tasks_lib import interrupts
from tasks_lib.container.docker_client import get_client
POLL_SEC = 0.5
#: how long the reader thread may take to notice its socket was shut down
DRAIN_SEC = 10.0


def stream_with_deadline(call: Callable[[docker.APIClient], Iterator[Any]], on_item: Callable[[Any], None],
                         timeout_sec: float, name: str) -> bool:
    """Feed every item of ``call(api)`` to ``on_item``; True when the stream ended by itself, False
    when it was cut at ``timeout_sec`` (or because the job is stopping). Errors of the call are
    re-raised here, on the caller's thread."""
    # the API version the shared client already negotiated: "auto" would ask the engine again,
    # one GET /version per log download (every trial has one)
    client = docker.from_env(timeout=max(60, int(timeout_sec) + 60), version=get_client().api.api_version)
    api = client.api
    responses: list = []
    api.hooks["response"].append(lambda response, *args, **kwargs: responses.append(response))
    failure: list[BaseException] = []

    def consume() -> None:
        try:
            for item in call(api):
                on_item(item)
        except Exception as exc:  # noqa: BLE001 - handed to the caller's thread
            failure.append(exc)

    worker = threading.Thread(target=consume, name=name, daemon=True)
    worker.start()
    deadline = time.monotonic() + timeout_sec
    try:
        while worker.is_alive() and time.monotonic() < deadline and not interrupts.stopping():
            worker.join(min(POLL_SEC, max(0.0, deadline - time.monotonic())))
        # a consumer that stopped reading (its bound, its error) leaves the engine writing into a
        # socket nobody reads, holding the container's lock: shut it whenever the worker is done
        for response in responses:
            _shutdown(api, response)
        if worker.is_alive():
            worker.join(DRAIN_SEC)
            return False
    finally:
        client.close()
    if failure:
        raise failure[0]
    return True


def _shutdown(api: docker.APIClient, response) -> None:
    try:
        sock = api._get_raw_response_socket(response)
        getattr(sock, "_sock", sock).shutdown(socket.SHUT_RDWR)
    except Exception:  # noqa: BLE001 - already closed, or not a socket we can reach
        pass
