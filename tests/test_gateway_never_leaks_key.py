"""The real keys (OpenAI's, Anthropic's, Gemini's) never leave the host process: not in replies (even when the upstream echoes it
in an error, as providers do), not in the gateway's error texts or usage record, not in any file
the gateway writes, not in the config's repr; the socket directory holds only the socket."""

import json
import socket

from gateway_helpers import ANTHROPIC_KEY, APIS, GEMINI, GEMINI_KEY, OPENAI_KEY, make_rig
from tasks_lib.gateway.model_gateway import ModelGateway, UpstreamConfig

KEYS = (OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY)
EVERY_API = [*APIS, GEMINI]


def _no_key_in(text: str) -> None:
    for key in KEYS:
        assert key not in text
        assert key[-12:] not in text  # not even a recognisable tail


def _files_text(root) -> str:
    return "\n".join(p.read_bytes().decode("utf-8", "replace") for p in root.rglob("*")
                     if p.is_file() and p.name != "mock.jsonl")  # the mock stands for the provider


def test_upstream_error_echoing_the_key_is_redacted(tmp_path):
    with make_rig(tmp_path, prefix="/status/401") as rig:
        token = rig.gateway.register_trial("t")
        replies = []
        with rig.client() as client:
            for api in EVERY_API:
                for stream in (False, True):
                    replies.append(client.post(api.path, headers=api.headers(token), json=api.body("tool", stream)))
        # the mock (standing for the provider) did get and echo the real keys
        assert OPENAI_KEY in (tmp_path / "mock.jsonl").read_text() and GEMINI_KEY in (tmp_path / "mock.jsonl").read_text()
        for resp in replies:
            assert resp.status_code == 401
            _no_key_in(resp.text)
            assert "Incorrect API key provided: [REDACTED]" in resp.text
        anthropic, gemini = replies[-3].json(), replies[-1].json()
        assert anthropic["error"]["type"] == "authentication_error"  # shapes pass through
        assert gemini["error"]["status"] == "UNAUTHENTICATED"
        usage = rig.gateway.usage("t")
        assert usage.errors == {401: 8} and usage.total_tokens == 0
        assert usage.last_error == "upstream 401: Mock error 401. Incorrect API key provided: [REDACTED]"
        _no_key_in(usage.model_dump_json())
    text = _files_text(tmp_path)
    assert "Incorrect API key provided: [REDACTED]" in text  # the request log has the errors ...
    _no_key_in(text)                                          # ... but never the key


def test_unreachable_upstream_error_names_the_url_not_the_key(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead_port = s.getsockname()[1]
    config = UpstreamConfig.from_env({"TBFLOW_OPENAI_BASE_URL": f"http://127.0.0.1:{dead_port}/v1",
                                      "OPENAI_API_KEY": OPENAI_KEY})
    with ModelGateway(tmp_path / "gw" / "gw.sock", config, log_path=tmp_path / "gw.jsonl") as gw:
        token = gw.register_trial("t")
        from gateway_helpers import Rig
        with Rig(None, gw, tmp_path / "gw" / "gw.sock", tmp_path / "gw.jsonl").client() as client:
            resp = client.post(APIS[0].path, headers=APIS[0].headers(token), json=APIS[0].body("tool", True))
        assert resp.status_code == 502
        message = resp.json()["error"]["message"]
        assert f"127.0.0.1:{dead_port}" in message and "unreachable" in message
        _no_key_in(resp.text)
        assert gw.usage("t").errors == {502: 1}
    _no_key_in(_files_text(tmp_path))


def test_config_repr_and_dump_hide_the_key():
    config = UpstreamConfig.from_env({"OPENAI_API_KEY": OPENAI_KEY, "ANTHROPIC_API_KEY": ANTHROPIC_KEY,
                                      "GEMINI_API_KEY": GEMINI_KEY})
    for text in (repr(config), str(config), config.model_dump_json(), json.dumps(config.model_dump(mode="json"))):
        _no_key_in(text)
    assert config.secrets() == [OPENAI_KEY, ANTHROPIC_KEY, GEMINI_KEY]


def test_socket_directory_holds_only_the_socket_and_tokens_never_reach_disk(tmp_path):
    with make_rig(tmp_path) as rig:
        token = rig.gateway.register_trial("t")
        with rig.client() as client:
            for api in EVERY_API:
                client.post(api.path, headers=api.headers(token), json=api.body("tool", True))
        assert [p.name for p in rig.socket_path.parent.iterdir()] == ["gw.sock"]
        text = _files_text(tmp_path)
    _no_key_in(text)
    assert token not in text
