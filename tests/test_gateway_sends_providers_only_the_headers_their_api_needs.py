"""The agent's request headers reach the provider by an allowlist, per API: what would steer the
operator's account (``OpenAI-Organization``, ``OpenAI-Project``, ``x-goog-user-project``, betas
that reach account resources or change the price, ``X-Forwarded-For``) travels no more with the
operator's key, while what each API needs (content type, accept, user agent, Anthropic's version
and wire-format betas) still does. Through the real gateway to a stand-in provider on loopback."""

from __future__ import annotations

import pytest
from gateway_helpers import APIS, GEMINI_JSON, make_rig

from tasks_lib.gateway.gateway_headers import forwarded_headers

RESPONSES, CHAT, ANTHROPIC = APIS
HOSTILE = {"X-Forwarded-For": "203.0.113.7", "X-Real-IP": "203.0.113.7", "Forwarded": "for=203.0.113.7",
           "X-Custom-Tracking": "agent", "Cookie": "session=agent"}
NEEDED = {"Content-Type": "application/json", "Accept": "text/event-stream", "User-Agent": "agent-cli/1.0"}


def _seen(tmp_path, api, extra: dict[str, str]) -> dict[str, str]:
    """The headers the stand-in provider received for one request of ``api``."""
    with make_rig(tmp_path) as rig:
        token = rig.gateway.register_trial("t")
        with rig.client() as client:
            reply = client.post(api.path, headers=api.headers(token) | NEEDED | HOSTILE | extra,
                                json=api.body("tool", False))
        assert reply.status_code == 200, reply.text
        (request,) = rig.mock.requests
        return request["headers"]


@pytest.mark.parametrize("api", [RESPONSES, CHAT], ids=["responses", "chat"])
def test_openai_organization_and_project_chosen_by_the_agent_do_not_reach_the_provider(tmp_path, api):
    seen = _seen(tmp_path, api, {"OpenAI-Organization": "org-agents-own", "OpenAI-Project": "proj_agents_own",
                                 "OpenAI-Beta": "responses=experimental"})
    assert "openai-organization" not in seen and "openai-project" not in seen
    assert seen["openai-beta"] == "responses=experimental"
    assert {k: seen[k.lower()] for k in NEEDED} == NEEDED


def test_x_forwarded_for_and_other_proxy_headers_do_not_reach_the_provider(tmp_path):
    seen = _seen(tmp_path, CHAT, {})
    assert not {h.lower() for h in HOSTILE} & set(seen)
    assert seen["authorization"].startswith("Bearer sk-proj-")  # the operator's key, set by the gateway


def test_anthropic_beta_keeps_only_wire_format_betas(tmp_path):
    wire = "interleaved-thinking-2025-05-14,fine-grained-tool-streaming-2025-05-14"
    account = "files-api-2025-04-14, context-1m-2025-08-07,extended-cache-ttl-2025-04-11,oauth-2025-04-20"
    seen = _seen(tmp_path, ANTHROPIC, {"anthropic-beta": f"{wire},{account}"})
    assert seen["anthropic-beta"] == wire
    assert seen["anthropic-version"] == "2023-06-01" and seen["user-agent"] == "agent-cli/1.0"


def test_anthropic_beta_of_only_account_betas_is_dropped(tmp_path):
    seen = _seen(tmp_path, ANTHROPIC, {"anthropic-beta": "mcp-client-2025-04-04,code-execution-2025-05-22"})
    assert "anthropic-beta" not in seen


def test_gemini_billing_project_chosen_by_the_agent_does_not_reach_the_provider(tmp_path):
    seen = _seen(tmp_path, GEMINI_JSON, {"x-goog-user-project": "agents-project"})
    assert "x-goog-user-project" not in seen and seen["content-type"] == "application/json"


def test_one_apis_header_is_not_sent_to_another():
    sent = [("anthropic-version", "2023-06-01"), ("OpenAI-Beta", "assistants=v2"), ("Content-Type", "x")]
    assert forwarded_headers("openai", sent) == [("openai-beta", "assistants=v2"), ("content-type", "x")]
    assert forwarded_headers("gemini", sent) == [("content-type", "x")]
