"""The gateway's socket is usable by any container user (socket 0666 in a 0755 directory it
creates), binds even past the 108-byte unix path limit (job dirs can be deep), replaces a stale
socket but refuses to steal a live one, and is removed on stop. A client that half-closes after
its request (tbflow-relay passes a CLI's on) still gets the reply. The gateway leaves signal
handlers alone; stop does not wait for a request hung upstream, and leaves no thread behind."""

import json
import os
import signal
import socket
import stat
import threading

import httpx
import pytest

from gateway_helpers import APIS
from mock_model import MockModel
from tbflow_process import wait_until
from tasks_lib.gateway.model_gateway import GatewayError, ModelGateway, UpstreamConfig
from tasks_lib.gateway.gateway_config import GatewayConfigError


@pytest.fixture(scope="module")
def mock():
    with MockModel() as m:
        yield m


def _config(mock):
    return UpstreamConfig.from_env({"TBFLOW_OPENAI_BASE_URL": f"{mock.base_url}/v1", "OPENAI_API_KEY": "sk-k"})


def _chat(sock, token):
    with httpx.Client(transport=httpx.HTTPTransport(uds=str(sock)), base_url="http://gw") as client:
        return client.post(APIS[1].path, headers=APIS[1].headers(token), json=APIS[1].body("tool", False))


def test_modes_and_removal(tmp_path, mock):
    sock = tmp_path / "job" / ".gateway" / "gw.sock"
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    gw = ModelGateway(sock, _config(mock)).start()
    try:
        # the server's thread leaves signals alone: Ctrl-C stays tbflow's (flows/cli/stopping.py)
        assert {sig: signal.getsignal(sig) for sig in handlers} == handlers
        assert stat.S_IMODE(sock.parent.stat().st_mode) == 0o755
        assert stat.S_ISSOCK(sock.stat().st_mode) and stat.S_IMODE(sock.stat().st_mode) == 0o666
        assert _chat(sock, gw.register_trial("t")).status_code == 200
    finally:
        gw.stop()
    assert not sock.exists()
    assert not _gateway_threads()
    gw.stop()  # idempotent


def _gateway_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("model-gateway")]


def test_half_closed_connection_still_gets_its_reply(tmp_path, mock):
    body = json.dumps(APIS[1].body("tool", False)).encode()
    with ModelGateway(tmp_path / "gw.sock", _config(mock)) as gw:
        token = gw.register_trial("t")
        with socket.socket(socket.AF_UNIX) as s:
            s.connect(str(tmp_path / "gw.sock"))
            s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nAuthorization: Bearer %s\r\n"
                      b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (token.encode(), len(body), body))
            s.shutdown(socket.SHUT_WR)  # done sending: the reply must still come, then the close
            reply = b""
            while chunk := s.recv(65536):
                reply += chunk
    head, _, reply_body = reply.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 200 ") and json.loads(reply_body)["choices"], reply[:300]
    assert gw.usage("t").responses_with_usage == 1


def test_stop_ends_a_request_hung_upstream_and_leaves_no_thread(tmp_path):
    with MockModel() as hanging:
        config = UpstreamConfig.from_env({"TBFLOW_OPENAI_BASE_URL": f"{hanging.base_url}/hang/v1", "OPENAI_API_KEY": "k"})
        gw = ModelGateway(tmp_path / "gw.sock", config).start()  # read timeout 600 s
        token, replies = gw.register_trial("t"), []
        client = threading.Thread(target=lambda: replies.append(_chat_or_error(tmp_path / "gw.sock", token)))
        client.start()
        wait_until(lambda: hanging.requests, 10, "the request to reach the upstream")
        gw.stop()
        client.join(10)
        assert not client.is_alive() and not _gateway_threads()
        assert replies == [500] or isinstance(replies[0], httpx.TransportError), replies  # ended, not held
        assert not (tmp_path / "gw.sock").exists()


def _chat_or_error(sock, token):
    try:
        return _chat(sock, token).status_code
    except httpx.TransportError as exc:
        return exc


def test_long_socket_path_binds(tmp_path, mock):
    sock = tmp_path / ("d" * 80) / ("e" * 40) / "gw.sock"
    assert len(os.fsencode(str(sock))) > 108
    with ModelGateway(sock, _config(mock)) as gw:
        assert sock.is_socket()
        # clients with a short path to the same inode (here via /proc, like the gateway) connect fine
        fd = os.open(sock.parent, os.O_PATH | os.O_DIRECTORY)
        try:
            assert _chat(f"/proc/self/fd/{fd}/gw.sock", gw.register_trial("t")).status_code == 200
        finally:
            os.close(fd)


def test_stale_socket_is_replaced_live_one_refused_file_kept(tmp_path, mock):
    sock = tmp_path / "gw.sock"
    stale = socket.socket(socket.AF_UNIX)
    stale.bind(str(sock))
    stale.close()  # a socket file nobody listens on, as a crashed run leaves it
    with ModelGateway(sock, _config(mock)) as gw:
        with pytest.raises(GatewayError, match="already listens"):
            ModelGateway(sock, _config(mock)).start()
        assert _chat(sock, gw.register_trial("t")).status_code == 200
    plain = tmp_path / "not-a-socket"
    plain.write_text("keep me")
    with pytest.raises(GatewayError, match="not a socket"):
        ModelGateway(plain, _config(mock)).start()
    assert plain.read_text() == "keep me"


def test_missing_upstream_for_a_family_is_a_config_error_and_a_502(tmp_path, mock):
    config = _config(mock)
    assert config.require("openai-chat").base_url == f"{mock.base_url}/v1"
    with pytest.raises(GatewayConfigError, match="ANTHROPIC_API_KEY"):
        config.require("anthropic-messages")
    with ModelGateway(tmp_path / "gw.sock", config) as gw:
        token = gw.register_trial("t")
        with httpx.Client(transport=httpx.HTTPTransport(uds=str(tmp_path / "gw.sock")), base_url="http://gw") as c:
            resp = c.post(APIS[2].path, headers=APIS[2].headers(token), json=APIS[2].body("tool", False))
    assert resp.status_code == 502
    assert resp.json()["error"]["message"] == "tbflow gateway: no anthropic upstream is configured"


def test_config_from_env_defaults_and_validation():
    config = UpstreamConfig.from_env({"ANTHROPIC_API_KEY": "a", "TBFLOW_GATEWAY_READ_TIMEOUT_SEC": "42"})
    assert config.openai is None
    assert config.anthropic.base_url == "https://api.anthropic.com/v1"
    assert config.anthropic.auth_header() == ("x-api-key", "a")
    assert config.read_timeout_sec == 42
    local = UpstreamConfig.from_env({"TBFLOW_OPENAI_BASE_URL": "http://127.0.0.1:9/v1/"})
    assert (local.openai.base_url, local.openai.auth_header()) == ("http://127.0.0.1:9/v1", None)
    with pytest.raises(GatewayConfigError, match="TBFLOW_OPENAI_BASE_URL"):
        UpstreamConfig.from_env({"TBFLOW_OPENAI_BASE_URL": "api.openai.com", "OPENAI_API_KEY": "k"})
    for bad in ("soon", "-1"):
        with pytest.raises(GatewayConfigError, match="TBFLOW_GATEWAY_READ_TIMEOUT_SEC"):
            UpstreamConfig.from_env({"TBFLOW_GATEWAY_READ_TIMEOUT_SEC": bad})
    pasted = UpstreamConfig.from_env({"TBFLOW_ANTHROPIC_BASE_URL": "https://proxy.example/v1", "ANTHROPIC_API_KEY": "a"})
    assert pasted.anthropic.base_url == "https://proxy.example/v1"
