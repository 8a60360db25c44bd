"""docker-py hands out an exec's raw socket after http.client has read the upgrade's headers
through a buffered reader, and reads past that buffer (docker-py#3332): output that arrived with
the headers was lost. A launcher whose report was lost so waited 10 s for an acknowledgement and
its trial ended "tbflow-launch did not start true: the judge wrote nothing" (q3, a quiet machine).
The reader starts with what the buffer already holds."""

from __future__ import annotations

import io
import socket
import struct
from types import SimpleNamespace

from tasks_lib.container.judge.judge_exec import StreamReader, prefetched


def _frame(data: bytes) -> bytes:
    return struct.pack(">BxxxI", 1, len(data)) + data


def _hijacked(payload: bytes):
    """A socket as docker-py returns it, whose HTTP response already read ``payload`` past the headers."""
    ours, engine = socket.socketpair()
    engine.sendall(b"HTTP/1.1 101 UPGRADED\r\nContent-Type: application/vnd.docker.raw-stream\r\n\r\n" + payload)
    raw = socket.SocketIO(ours, "rb")
    buffered = io.BufferedReader(raw)
    while buffered.readline() not in (b"\r\n", b""):  # what http.client does with the headers
        pass
    raw._response = SimpleNamespace(raw=SimpleNamespace(_fp=SimpleNamespace(fp=buffered)))
    return raw, engine


def test_bytes_read_with_the_headers_are_handed_to_the_reader():
    report = b"launch 3\n123\nend 0\n\n"
    sock, engine = _hijacked(_frame(report))
    reader = StreamReader(sock, "test")
    engine.shutdown(socket.SHUT_WR)  # the exec ended
    reader.start()
    reader.join(10)
    assert bytes(reader.out) == report
    engine.close()


def test_nothing_buffered_reads_as_nothing_and_does_not_wait():
    sock, engine = _hijacked(b"")
    assert prefetched(sock) == b""  # the engine has sent nothing more, and this must not block
    engine.sendall(_frame(b"end 0\n\n"))
    engine.shutdown(socket.SHUT_WR)
    reader = StreamReader(sock, "test")
    reader.start()
    reader.join(10)
    assert bytes(reader.out) == b"end 0\n\n"
    engine.close()
