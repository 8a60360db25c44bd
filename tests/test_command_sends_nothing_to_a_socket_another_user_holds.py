"""The warm server's socket name is abstract (no file, no permissions): any local user can bind
it first. A command must then believe nothing from there (the warm server's ``ok API_URL``), and still do its work itself (flows/local_server/socket_peer.py). The stranger is a
forked child running as ``nobody`` (tests/socket_stranger.py)."""

import os
import socket
import subprocess

import pytest

from flows.local_server import warm_server
from flows.local_server.warm_server_main import socket_name as server_socket
from flows.local_server.socket_peer import UntrustedPeer, check_server
from socket_stranger import Received, Stranger
from tbflow_process import ROOT, TBFLOW

SECRET = "sk-test-for-nobody-else"


def _env(tmp_path) -> dict[str, str]:
    env = dict(os.environ, PREFECT_HOME=str(tmp_path / "prefect-home"), TBFLOW_SERVER_IDLE_SEC="300",
               OPENAI_API_KEY=SECRET)
    env.pop("PREFECT_API_URL", None)
    return env


def test_warm_server_client_believes_no_answer_from_a_socket_another_user_holds(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "prefect-home"))
    saved = os.environ.pop("PREFECT_API_URL", None)
    try:
        with Stranger(server_socket(warm_server.server_key(idle=300)), socket.SOCK_STREAM,
                      reply=b"ok http://127.0.0.1:9/api\n") as stranger:
            with pytest.raises(UntrustedPeer):
                warm_server.attach(300, {})
            assert "PREFECT_API_URL" not in os.environ, "the stranger's API URL was believed"
            status = subprocess.run([*TBFLOW, "server", "status"], cwd=ROOT, env=_env(tmp_path), capture_output=True,
                                    text=True, timeout=120)
    finally:
        if saved is not None:
            os.environ["PREFECT_API_URL"] = saved
    assert stranger.received == Received(connections=2, data=b"", fds=0)
    assert status.returncode == 1, status.stdout + status.stderr
    assert status.stderr.startswith("tbflow: error: the socket of") and "Traceback" not in status.stderr, status.stderr
    assert not (tmp_path / "prefect-home" / warm_server.LOG_NAME).exists(), "a warm server was started anyway"


def test_a_listener_of_this_user_that_is_another_program_is_not_trusted():
    name = b"\0tbflow-test-peer-" + os.urandom(6).hex().encode()
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(name)
    listener.listen(1)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(name)
        with pytest.raises(UntrustedPeer, match=f"held by pid {os.getpid()} .*another program"):
            check_server(client, "flows.local_server.warm_server_main", "somekey")
    finally:
        client.close()
        listener.close()
