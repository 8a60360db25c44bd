"""Execs of tbflow's own tools in a trial container, each under a host-side deadline.

Every exec tbflow runs in a container goes through here: its output is read on a helper thread
with a bounded buffer that keeps *draining* past the cap (a stream nobody reads makes the engine
stop finishing that container's execs), the read ends at EOF or at the deadline (the socket is
then shut down by us), and the exit code is the one Docker reports for the exec, polled until
the exec says it has run and ended (``Running`` false *and* an ``ExitCode``: right after the start
``exec_inspect`` can show an exec that has not started yet as not running). No call here waits
on anything the agent can block for longer than its deadline.

The judge and the launcher get the exec's stdin attached and wait, after their ``end`` record,
until we close it (judge/judge.h: Docker can drop the last output of an exec whose process exits
at once); the reader closes its writing side as soon as it has read ``end``.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from dataclasses import dataclass

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.container.engine_events import ENGINE_EVENTS
from tasks_lib.container.judge.judge_channel import Channel, next_record, parse_channel
from tasks_lib.container.judge.judge_tools import JUDGE, JUDGE_USER
from tasks_lib.errors import ContainerError
from tasks_lib import interrupts
#: more than any report: every record whose size or count the agent controls has a cap, and the
#: judge's build asserts that their sum stays well below this (judge/judge.h CHANNEL_MAX, VERIFY_WORST)
MAX_BYTES = 8 * 1024 * 1024
#: after the stream ended, how long the exec may take to show its exit code
EXIT_GRACE_SEC = 10.0
POLL_START_SEC = 0.02
POLL_MAX_SEC = 0.25


class StreamReader(threading.Thread):
    """Reads a hijacked exec stream (Docker's 8-byte frame headers) into bounded buffers."""

    def __init__(self, sock, name: str, ack_end: bool = False) -> None:
        super().__init__(name=name, daemon=True)
        self._sock = getattr(sock, "_sock", sock)
        self._wrapper = sock
        #: what the HTTP client read past the upgrade's headers before handing us the socket
        self._prefetched = prefetched(sock)
        self.out = bytearray()
        self.err = bytearray()
        self.overflow = False
        self._halt = threading.Event()
        #: close our side of the exec's stdin once stdout holds the ``end`` record (the judge's ack)
        self._ack_end = ack_end
        self._scanned = 0

    def run(self) -> None:
        pending = b""
        self._sock.settimeout(0.5)
        while not self._halt.is_set():
            try:
                chunk, self._prefetched = (self._prefetched, b"") if self._prefetched else (self._sock.recv(65536), b"")
            except socket.timeout:
                continue
            except OSError:
                break
            if not chunk:
                break
            pending += chunk
            while len(pending) >= 8:
                stream, size = pending[0], struct.unpack(">I", pending[4:8])[0]
                if len(pending) < 8 + size:
                    break
                self._keep(stream, pending[8:8 + size])
                pending = pending[8 + size:]
            if self._ack_end:
                self._ack_if_ended()

    def _ack_if_ended(self) -> None:
        while (found := next_record(self.out, self._scanned)) is not None:
            tag, self._scanned = found
            if tag in ("end", ""):  # the report is whole (or will never be): let the judge go
                self._ack_end = False
                try:
                    self._sock.shutdown(socket.SHUT_WR)
                except OSError:
                    pass
                return

    def _keep(self, stream: int, data: bytes) -> None:
        buf = self.out if stream == 1 else self.err
        room = MAX_BYTES - len(buf)
        if len(data) > room:
            self.overflow = True
        buf += data[:max(room, 0)]

    def close(self) -> None:
        self._halt.set()
        for how in (lambda: self._sock.shutdown(socket.SHUT_RDWR), self._sock.close, self._wrapper.close):
            try:
                how()
            except OSError:
                pass


def prefetched(sock) -> bytes:
    """The exec's first bytes that docker-py's HTTP client already read into its buffer with the
    upgrade's headers. docker-py hands out the raw socket and reads past that buffer, so a process
    that writes at once (the judge's report, the launcher's) lost its output now and then
    (docker-py#3332; seen here on a quiet machine: "the judge wrote nothing" for ``true``)."""
    try:
        buffered = sock._response.raw._fp.fp  # the http.client response's BufferedReader
        raw = getattr(sock, "_sock", sock)
    except AttributeError:
        return b""
    raw.setblocking(False)  # peek returns what is buffered; with nothing buffered it must not wait
    try:
        data = buffered.peek(65536) or b""
        return buffered.read(len(data)) if data else b""
    except (OSError, ValueError):
        return b""
    finally:
        raw.setblocking(True)


@dataclass
class ToolRun:
    channel: Channel
    exit_code: int | None
    #: the host-side deadline passed before the exec ended (its output so far is in ``channel``)
    timed_out: bool
    overflow: bool
    duration_sec: float
    stderr: bytes
    stdout: bytes = b""

    @property
    def complete(self) -> bool:
        """A whole report from a judge that ended by itself: the only kind tbflow trusts."""
        return self.channel.ended and self.exit_code == 0 and not self.overflow and not self.timed_out


def start(container: str, argv: list[str], stage: str, *, user: str, env: dict[str, str] | None = None,
          workdir: str = "/", ack_end: bool = False) -> tuple[str, StreamReader]:
    """Start ``argv`` as an exec and read its stream; ``ack_end``: a program of the judge's that waits
    on its stdin after ``end`` (judge/judge.h), so stdin is attached and closed once ``end`` is read."""
    api = get_client().api
    try:
        exec_id = api.exec_create(container, argv, user=user, environment=env or None, stdin=ack_end,
                                  stdout=True, stderr=True, workdir=workdir)["Id"]
        sock = api.exec_start(exec_id, socket=True)
    except DOCKER_ERRORS as exc:
        raise ContainerError(stage, f"could not start {argv[0]} in the container: {exc}") from exc
    reader = StreamReader(sock, f"exec-{exec_id[:12]}", ack_end=ack_end)
    reader.start()
    return exec_id, reader


def exit_code(exec_id: str, until: float) -> int | None:
    """The exec's exit code once it has started and ended; None if that does not happen by ``until``."""
    api = get_client().api
    delay = POLL_START_SEC
    with ENGINE_EVENTS.exec_end(exec_id) as ended:  # woken by the engine's exec_die (engine_events)
        while True:
            if (code := ended.exit_code()) is not None:  # the engine's event had it: no look needed
                return code
            try:
                info = api.exec_inspect(exec_id)
            except DOCKER_ERRORS:
                info = {}
            if info and not info.get("Running") and info.get("ExitCode") is not None:
                return int(info["ExitCode"])
            if time.monotonic() >= until:
                return None
            ended.pause(min(delay, max(0.0, until - time.monotonic())))
            delay = min(delay * 1.5, POLL_MAX_SEC)


#: the judge's exit code when its setuid start did not make it root (judge/main.c)
NOT_ROOT_EXIT = 90


def run_judge(container: str, args: list[str], stage: str, deadline_sec: float, *,
              env: dict[str, str] | None = None) -> ToolRun:
    """Run ``tbflow-judge ARGS`` and read its report, all within ``deadline_sec``.

    Started as ``JUDGE_USER`` so the setuid bit makes it root and non-dumpable from the start. On
    an engine where that cannot work (``no-new-privileges``, user namespaces: the kernel decides,
    nothing in the container can) it is run again as root, which leaves a window of microseconds
    after its start before it makes itself non-dumpable (docs/judge.md, "Not guaranteed")."""
    run = run_tool(container, [JUDGE, *args], stage, deadline_sec, user=JUDGE_USER, env=env, ack_end=True)
    if run.exit_code == NOT_ROOT_EXIT and run.channel.ended and any("not root" in f for f in run.channel.text("fail")):
        return run_tool(container, [JUDGE, *args], stage, deadline_sec, user="0", env=env, ack_end=True)
    return run


def run_tool(container: str, argv: list[str], stage: str, deadline_sec: float, *, user: str,
             env: dict[str, str] | None = None, ack_end: bool = False, workdir: str = "/") -> ToolRun:
    """Run one of tbflow's own programs (absolute path, no shell) and read its output, all within
    ``deadline_sec``; the output is parsed as the judge's channel (empty for other programs)."""
    began = time.monotonic()
    deadline = began + deadline_sec
    exec_id, reader = start(container, argv, stage, user=user, env=env, ack_end=ack_end, workdir=workdir)
    try:
        while reader.is_alive() and time.monotonic() < deadline:
            reader.join(0.25)
            interrupts.check()
        timed_out = reader.is_alive()
        code = None if timed_out else exit_code(exec_id, min(deadline, time.monotonic() + EXIT_GRACE_SEC))
    finally:
        reader.close()
    return ToolRun(channel=parse_channel(bytes(reader.out)), exit_code=code, timed_out=timed_out or code is None,
                   overflow=reader.overflow, duration_sec=time.monotonic() - began, stderr=bytes(reader.err),
                   stdout=bytes(reader.out))


def read_launch(reader: StreamReader, deadline_sec: float) -> Channel:
    """The launcher's report (its session id) from a started ``tbflow-launch`` exec. The stream is
    closed once the report is whole (the agent's command goes on: closing an exec's attach does
    not stop its process)."""
    until = time.monotonic() + deadline_sec
    channel = parse_channel(bytes(reader.out))
    while not channel.ended and reader.is_alive() and time.monotonic() < until:
        reader.join(0.02)
        channel = parse_channel(bytes(reader.out))
    reader.close()
    return parse_channel(bytes(reader.out))
