"""A stranger holding one of tbflow's abstract socket names first: a forked child that drops to
user ``nobody`` (when the tests run as root; otherwise it stays this uid, and only its command
line tells it apart), binds the name, answers every connection with a canned reply, counts every
byte and file descriptor a client sends it, and hangs up after a client's first message."""

from __future__ import annotations

import array
import os
import pwd
import select
import socket
from dataclasses import dataclass


@dataclass
class Received:
    connections: int
    data: bytes
    fds: int


class Stranger:
    """``with Stranger(name, kind, reply) as s: ...``; ``s.received`` once the block is left."""

    def __init__(self, name: bytes, kind: int, reply: bytes = b"") -> None:
        self.name, self.kind, self.reply = name, kind, reply
        self.uid = pwd.getpwnam("nobody").pw_uid if os.getuid() == 0 else os.getuid()
        self.received: Received | None = None

    def __enter__(self) -> Stranger:
        ready_r, ready_w = os.pipe()
        self._stop_r, self._stop_w = os.pipe()
        self._result_r, result_w = os.pipe()
        self.pid = os.fork()
        if self.pid == 0:
            try:
                for fd in (ready_r, self._stop_w, self._result_r):
                    os.close(fd)
                self._serve(ready_w, result_w)
            finally:
                os._exit(0)
        for fd in (ready_w, result_w, self._stop_r):
            os.close(fd)
        with os.fdopen(ready_r, "rb") as ready:
            assert ready.read(1) == b"r", "the stranger could not bind the socket name"
        return self

    def __exit__(self, *exc) -> None:
        os.close(self._stop_w)
        with os.fdopen(self._result_r, "rb") as result:
            connections, fds, data = result.read().split(b" ", 2)
        os.waitpid(self.pid, 0)
        self.received = Received(int(connections), data, int(fds))

    def _serve(self, ready_w: int, result_w: int) -> None:
        """In the child: bind as the stranger, then serve until the test closes the stop pipe."""
        if self.uid != os.getuid():
            os.setgroups([])
            os.setgid(pwd.getpwuid(self.uid).pw_gid)
            os.setuid(self.uid)
        listener = socket.socket(socket.AF_UNIX, self.kind)
        listener.bind(self.name)
        listener.listen(8)
        os.write(ready_w, b"r")
        os.close(ready_w)
        conns: list[socket.socket] = []
        data, fds, accepted = bytearray(), 0, 0
        stopping = False
        while True:  # once asked to stop: until what was already sent or queued is read
            ready, _, _ = select.select([listener, self._stop_r, *conns], [], [], 0 if stopping else None)
            stopping = stopping or self._stop_r in ready
            if stopping and not set(ready) - {self._stop_r}:
                break
            if listener in ready:
                conn, _ = listener.accept()
                conns.append(conn)
                accepted += 1
                try:
                    conn.send(self.reply)  # what a hostile server would say first, asked or not
                except OSError:  # the client has gone already
                    pass
            for conn in (c for c in conns if c in ready):
                chunk, got = _receive(conn)
                data += chunk
                fds += got
                conns.remove(conn)  # EOF, or what it came for: hang up (a client waiting on it fails fast)
                conn.close()
        os.write(result_w, b"%d %d " % (accepted, fds) + bytes(data))


def _receive(conn: socket.socket) -> tuple[bytes, int]:
    """One message (and the fds attached to it, closed at once)."""
    fds = array.array("i")
    try:
        msg, ancdata, _, _ = conn.recvmsg(1 << 20, socket.CMSG_SPACE(16 * fds.itemsize))
    except OSError:
        return b"", 0
    for level, kind, payload in ancdata:
        if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
            fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
    for fd in fds:
        os.close(fd)
    return msg, len(fds)
