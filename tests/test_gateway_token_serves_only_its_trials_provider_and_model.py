"""A trial benchmarking one provider's model cannot spend another provider's key nor another model
with its token: the gateway refuses (403, in the API's error shape) a request of another API family
or naming another model, nothing reaches the upstream, and the trial's usage (its record) keeps
what was asked and when. The trial's own model still passes."""

from __future__ import annotations

import pytest

from gateway_helpers import APIS, GEMINI, rig  # noqa: F401
from tasks_lib.gateway.gateway_policy import TrialScope, asked_model, model_refusal

RESPONSES, CHAT, ANTHROPIC = APIS


def _post(rig, api, token, body=None):
    with rig.client() as client:
        return client.post(api.path, headers=api.headers(token), json=body or api.body("tool", False))


def test_openai_trial_calling_anthropic_messages_is_refused_with_evidence(rig):
    token = rig.gateway.register_trial("t", TrialScope.of("openai-responses", "openai/gpt-test"))
    resp = _post(rig, ANTHROPIC, token)
    assert resp.status_code == 403
    assert resp.json()["error"]["type"] == "permission_error"
    assert "serves only the openai API" in resp.json()["error"]["message"]
    assert rig.mock.requests == []  # the Anthropic key was never attached to anything
    usage = rig.gateway.unregister_trial("t")  # what the trial's record gets
    assert usage.errors == {403: 1} and usage.total_tokens == 0
    [evidence] = usage.refused
    assert (evidence.method, evidence.path, evidence.asked_family) == ("POST", "/v1/messages", "anthropic")
    assert evidence.asked_model is None  # refused from its headers, before its body was read
    assert evidence.time.endswith("+00:00")


@pytest.mark.parametrize("api", [RESPONSES, CHAT], ids=lambda a: a.name)
def test_trial_naming_another_model_is_refused_with_what_it_asked(rig, api):
    token = rig.gateway.register_trial("t", TrialScope.of(f"openai-{api.name}", "openai/gpt-test"))
    resp = _post(rig, api, token, api.body("tool", False) | {"model": "gpt-expensive"})
    assert resp.status_code == 403 and resp.json()["error"]["code"] == "model_not_allowed"
    assert rig.mock.requests == []
    [evidence] = rig.gateway.usage("t").refused
    assert (evidence.asked_family, evidence.asked_model) == ("openai", "gpt-expensive")
    assert "serves only model 'gpt-test'" in evidence.reason
    assert _post(rig, api, token).status_code == 200  # its own model passes
    assert [r["body"]["model"] for r in rig.mock.requests] == ["gpt-test"]


def test_anthropic_trial_cannot_name_another_model_nor_call_openai(rig):
    token = rig.gateway.register_trial("t", TrialScope.of("anthropic-messages", "anthropic/claude-test"))
    assert _post(rig, ANTHROPIC, token, ANTHROPIC.body("tool", False) | {"model": "claude-opus"}).status_code == 403
    assert _post(rig, ANTHROPIC, token, {"messages": []}).status_code == 403  # no model named
    with rig.client() as client:  # the token in OpenAI's header style, on OpenAI's route
        assert client.post(CHAT.path, headers={"Authorization": f"Bearer {token}"},
                           json=CHAT.body("tool", False)).status_code == 403
    assert _post(rig, ANTHROPIC, token).status_code == 200
    assert [(e.asked_family, e.asked_model) for e in rig.gateway.usage("t").refused] == [
        ("anthropic", "claude-opus"), ("anthropic", None), ("openai", None)]


def test_gemini_trial_naming_another_model_in_its_path_is_refused(rig):
    token = rig.gateway.register_trial("t", TrialScope.of("gemini-generate-content", "gemini/gemini-test"))
    with rig.client() as client:
        other = client.post(GEMINI.path.replace("gemini-test", "gemini-ultra"), headers=GEMINI.headers(token),
                            json=GEMINI.body("tool", True))
        own = client.post(GEMINI.path, headers=GEMINI.headers(token), json=GEMINI.body("tool", True))
    assert (other.status_code, own.status_code) == (403, 200)
    assert other.json()["error"]["status"] == "PERMISSION_DENIED"
    assert [e.asked_model for e in rig.gateway.usage("t").refused] == ["gemini-ultra"]


def test_scope_rules_read_the_model_where_each_api_puts_it():
    scope = TrialScope.of("openai-chat", "openrouter/gpt-test")
    assert scope.model == "gpt-test" and scope.family == "openai"
    assert asked_model("openai", "POST", "/v1/chat/completions", b'{"model": "gpt-test"}') == "gpt-test"
    assert asked_model("openai", "POST", "/v1/chat/completions", b"not json") is None
    assert asked_model("openai", "POST", "/v1/chat/completions", b'["model"]') is None
    assert asked_model("gemini", "POST", "/v1beta/models/g-1:generateContent", b"") == "g-1"
    assert model_refusal(scope, "POST", "gpt-test") is None
    assert model_refusal(scope, "GET", None) is None  # listing models spends nothing
    assert model_refusal(scope, "POST", "gpt-test-2") is not None


def test_model_of_a_long_history_is_checked_too(rig):
    """A body too large to parse on the event loop is parsed aside, with the same rule."""
    token = rig.gateway.register_trial("t", TrialScope.of("openai-chat", "openai/gpt-test"))
    history = [{"role": "user", "content": "x" * 1024}] * 1024  # about 1 MiB, as a long session sends
    other = _post(rig, CHAT, token, CHAT.body("tool", False) | {"model": "gpt-expensive", "messages": history})
    own = _post(rig, CHAT, token, CHAT.body("tool", False) | {"messages": history})
    assert (other.status_code, own.status_code) == (403, 200)
    assert [e.asked_model for e in rig.gateway.usage("t").refused] == ["gpt-expensive"]
