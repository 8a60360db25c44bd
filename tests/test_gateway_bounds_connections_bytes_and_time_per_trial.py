"""A hostile agent on the gateway's socket cannot make the job process hold its bodies, its slots
or its time: a tokenless request is refused from its headers with its body unread, a trial's
requests in flight and everyone's body bytes are bounded, and a connection that never finishes
its headers or its body is ended. Honest requests of another trial pass meanwhile."""

from __future__ import annotations

import contextlib
import socket
import time

import pytest

from gateway_helpers import APIS, make_rig
from tasks_lib.gateway.gateway_limits import MIB, GatewayLimits

CHAT = APIS[1]
#: generous: a deadline of the gateway's own is what each test waits on, this only ends a broken test
WAIT_SEC = 20.0


@pytest.fixture
def bounded(tmp_path):
    limits = GatewayLimits(max_connections=6, headers_deadline_sec=1.0, max_body_bytes=4 * MIB,
                           body_deadline_sec=1.0, per_trial_requests=2,
                           per_trial_body_bytes=int(2.5 * MIB), total_body_bytes=3 * MIB)
    with make_rig(tmp_path, limits=limits) as rig:
        yield rig


def _connect(rig) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(WAIT_SEC)
    s.connect(str(rig.socket_path))
    return s


def _head(path: str, length: int, token: str | None) -> bytes:
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    return (f"POST {path} HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n{auth}"
            f"Content-Length: {length}\r\n\r\n").encode()


def _reply(s: socket.socket) -> tuple[int, bytes]:
    """The status and everything the gateway sent until it closed the connection."""
    data = b""
    with contextlib.suppress(ConnectionResetError):
        while chunk := s.recv(65536):
            data += chunk
    status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/1.1 ") else 0
    return status, data


def _until(condition) -> None:
    """Wait for the gateway's own state to reach ``condition`` (its server thread moves it)."""
    deadline = time.monotonic() + WAIT_SEC
    while not condition():
        assert time.monotonic() < deadline, "the gateway never got there"
        time.sleep(0.01)


def _honest(rig, token: str) -> int:
    with rig.client() as client:
        return client.post(CHAT.path, headers=CHAT.headers(token), json=CHAT.body("tool", False)).status_code


def test_tokenless_body_is_refused_from_its_headers_without_being_read(bounded):
    rig = bounded
    s = _connect(rig)
    s.sendall(_head(CHAT.path, 64 * MIB, None) + b"x" * 65536)  # declares 64 MiB, sends 64 KiB of it
    status, data = _reply(s)  # the 401 comes while 63.9 MiB are still unsent: nothing waited for them
    assert status == 401 and b"missing or unknown trial token" in data
    s.close()
    assert rig.gateway.rejected == 1 and rig.mock.requests == []


def test_trial_over_its_requests_in_flight_gets_429_while_another_trial_passes(bounded):
    rig = bounded
    greedy, other = rig.gateway.register_trial("greedy"), rig.gateway.register_trial("other")
    held = [_connect(rig) for _ in range(2)]
    for s in held:  # two requests of "greedy" in flight: their bodies never finish
        s.sendall(_head(CHAT.path, 1000, greedy) + b"{")
    _until(lambda: rig.gateway.in_flight.requests.get("greedy") == 2)
    third = _connect(rig)
    third.sendall(_head(CHAT.path, 2, greedy) + b"{}")
    status, data = _reply(third)
    assert status == 429 and b"requests at once for this trial" in data
    assert _honest(rig, other) == 200
    for s in held:  # the held ones end at their body deadline: 408, and the slots are free again
        assert _reply(s)[0] == 408
    assert _honest(rig, greedy) == 200
    assert rig.gateway.usage("greedy").errors == {429: 1, 408: 2}


def test_bodies_held_by_all_trials_are_bounded(bounded):
    rig = bounded
    a, b = rig.gateway.register_trial("a"), rig.gateway.register_trial("b")
    first = _connect(rig)
    first.sendall(_head(CHAT.path, 3 * MIB, a) + b"x" * (2 * MIB))  # 2 of the 3 MiB everyone may hold
    _until(lambda: rig.gateway.in_flight.body_bytes == 2 * MIB)
    second = _connect(rig)
    second.sendall(_head(CHAT.path, 2 * MIB, b))
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        second.sendall(b"y" * (2 * MIB))
    status, data = _reply(second)
    assert status == 503 and b"retry shortly" in data
    assert _reply(first)[0] == 408  # its body never completed
    assert _honest(rig, b) == 200  # the bytes are free again
    assert rig.gateway.in_flight.body_bytes == 0 and rig.gateway.in_flight.requests == {}


def test_bodies_held_by_one_trial_are_bounded(bounded):
    rig = bounded
    greedy, other = rig.gateway.register_trial("greedy"), rig.gateway.register_trial("other")
    first = _connect(rig)
    first.sendall(_head(CHAT.path, 3 * MIB, greedy) + b"x" * (2 * MIB))  # 2 of its 2.5 MiB
    _until(lambda: rig.gateway.in_flight.trial_bytes.get("greedy") == 2 * MIB)
    second = _connect(rig)
    second.sendall(_head(CHAT.path, MIB, greedy))
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        second.sendall(b"y" * MIB)
    status, data = _reply(second)
    assert status == 429 and b"request bytes at once for this trial" in data
    assert _honest(rig, other) == 200  # the total has room for the others
    assert _reply(first)[0] == 408


def test_body_over_the_request_bound_is_refused_unread(bounded):
    rig = bounded
    token = rig.gateway.register_trial("t")
    s = _connect(rig)
    s.sendall(_head(CHAT.path, 5 * MIB, token))
    status, data = _reply(s)
    assert status == 413 and b"request body over" in data
    assert rig.mock.requests == []


def test_connection_that_never_finishes_its_headers_is_closed(bounded):
    rig = bounded
    s = _connect(rig)
    s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n")  # and nothing more
    assert _reply(s) == (0, b"")  # closed by the gateway at its headers deadline
    token = rig.gateway.register_trial("t")
    assert _honest(rig, token) == 200


def test_connections_past_the_bound_are_closed_at_once_and_honest_ones_come_back(bounded):
    rig = bounded
    idle = [_connect(rig) for _ in range(6)]
    extra = _connect(rig)
    assert _reply(extra) == (0, b"")  # one too many: closed before its first byte
    for s in idle:  # the gateway closes its end once it let the connection go: then its slot is free
        s.shutdown(socket.SHUT_WR)
        assert _reply(s) == (0, b"")
        s.close()
    token = rig.gateway.register_trial("t")
    assert _honest(rig, token) == 200
