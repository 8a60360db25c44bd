"""Who is at the other end of one of tbflow's abstract unix sockets, asked of the kernel
(``SO_PEERCRED``) before anything is sent to it or believed from it.

Why: an abstract socket name (``\\0tbflow-server-KEY``) has no file and so no permissions: any
process on the machine, of any user, can bind the name first. The warm server
(flows/local_server/warm_server_main.py) tells commands where the Prefect API is. So both ends
check: the servers answer only their own uid (``same_user``), and the commands talk only to a
process of their own uid that runs the expected ``python -m MODULE KEY`` (``check_server``). The
uid is the boundary (the kernel records it when the peer called ``listen``, it cannot be forged);
the command line, which the same user could forge, keeps a command from talking to some other
program of its own user that happens to hold the name (a stale tool, a test). Linux only, as
abstract sockets are.
"""

from __future__ import annotations

import os
import socket
import struct
from pathlib import Path
from typing import NamedTuple

_UCRED = struct.Struct("3i")  # struct ucred: pid, uid, gid


class Peer(NamedTuple):  # (not a dataclass: this is on every command's start-up path, flows/cli/entry.py)
    """The credentials the kernel recorded for the other end (for a listener: when it listened)."""

    pid: int
    uid: int
    gid: int


class UntrustedPeer(RuntimeError):
    """The socket name is held by a process that is not the tbflow process this command expects:
    nothing was sent to it, and what it said is not used."""


def peer_of(conn: socket.socket) -> Peer:
    pid, uid, gid = _UCRED.unpack(conn.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, _UCRED.size))
    return Peer(pid, uid, gid)


def same_user(conn: socket.socket) -> bool:
    """Whether the process at the other end runs as this process's uid (the servers' check)."""
    return peer_of(conn).uid == os.getuid()


def check_server(conn: socket.socket, module: str, key: str) -> None:
    """Raise ``UntrustedPeer`` unless the listener ``conn`` is connected to runs as this uid and
    as ``python -m MODULE KEY …`` (how flows/local_server/warm_server.spawn_background starts it)."""
    peer = peer_of(conn)
    where = f"the socket of `python -m {module}` (key {key})"
    if peer.uid != os.getuid():
        raise UntrustedPeer(f"{where} is held by pid {peer.pid} of uid {peer.uid}, not by this user "
                            f"(uid {os.getuid()})")
    argv = _argv(peer.pid)
    if argv[1:4] != ["-m", module, key]:
        shown = " ".join(argv)[:200] if argv else "command line unreadable"
        raise UntrustedPeer(f"{where} is held by pid {peer.pid} ({shown}), another program")


def _argv(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:  # gone, or in another pid namespace (the kernel then reports pid 0)
        return []
    return [part.decode(errors="replace") for part in raw.split(b"\0")[:-1]] if pid > 0 else []
