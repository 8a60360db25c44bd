"""Which container a connection to the gateway's socket comes from, before it sends a byte.

Why: every trial container of a job reaches the same socket, and a connection says nothing about
its trial until its headers (and token) arrive, so one agent opening connections could take the
slots of all. The kernel tells who connected (``SO_PEERCRED``: the peer's pid, in this process's
pid namespace); that process's cgroup names its container. Connections are then bounded per
container (``GatewayLimits.per_container_connections``), which is per trial.

A process outside containers (tbflow's own host-side callers), or one this process cannot see
(pid 0: tbflow itself runs in a container beside the trials'), counts only towards the total
bound. A peer that cannot be read (it exited right after connecting, handing its connection to a
child, or a pid namespace hides it) counts in one shared bucket, ``UNPLACED``, bounded like a
container: leaving is no way around the bound, and honest clients (the relay's children, which
live as long as their connection) are always placed.
"""

from __future__ import annotations

import re
import socket
import struct
from pathlib import Path

_CONTAINER_ID = re.compile(r"[0-9a-f]{64}")
_UCRED = struct.Struct("3i")
#: the bucket of connections whose peer could not be read
UNPLACED = "unplaced"


def container_of_cgroup(text: str) -> str | None:
    """The container id in a ``/proc/PID/cgroup`` text (cgroup v1 ``/docker/<id>``, v2
    ``docker-<id>.scope``), or None for a process outside containers."""
    found = _CONTAINER_ID.findall(text)
    return found[-1] if found else None


def peer_bucket(sock: socket.socket) -> str | None:
    """Whose connection ``sock`` is: the peer's container id; None for a process outside
    containers or outside this process's pid namespace; ``UNPLACED`` when the peer is gone."""
    try:
        pid, _, _ = _UCRED.unpack(sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    except (OSError, struct.error):
        return None
    if pid <= 0:
        return None
    try:
        return container_of_cgroup(Path(f"/proc/{pid}/cgroup").read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return UNPLACED
