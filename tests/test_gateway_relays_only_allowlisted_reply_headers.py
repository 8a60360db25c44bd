"""The agent sees none of what a provider's reply headers say about the account behind the key
(organisation, project, quotas, cookies) nor a header echoing the key on an error: only the
allowlisted headers an HTTP client and the SDKs' retry loops act on pass, on success and error."""

from __future__ import annotations

import pytest

from gateway_helpers import ANTHROPIC_KEY, APIS, OPENAI_KEY, make_rig, rig  # noqa: F401
from mock_model import ACCOUNT_HEADERS
from tasks_lib.gateway.gateway_headers import RELAYED

ACCOUNT_ONLY = {name for name in ACCOUNT_HEADERS if name not in RELAYED}


def _post(rig, api):
    token = rig.gateway.register_trial("t")
    with rig.client() as client:
        return client.post(api.path, headers=api.headers(token), json=api.body("tool", False))


@pytest.mark.parametrize("api", APIS, ids=lambda a: a.name)
def test_success_reply_keeps_only_allowlisted_headers(rig, api):
    resp = _post(rig, api)
    assert resp.status_code == 200
    assert ACCOUNT_ONLY and not ACCOUNT_ONLY & set(resp.headers)
    assert set(resp.headers) <= RELAYED
    assert (resp.headers["retry-after"], resp.headers["x-request-id"]) == ("1", "req_mock")


@pytest.mark.parametrize("api", APIS, ids=lambda a: a.name)
def test_error_reply_headers_never_carry_the_key_nor_the_account(tmp_path, api):
    with make_rig(tmp_path, prefix="/status/429") as rig:
        resp = _post(rig, api)
        seen_key = rig.mock.requests[0]["headers"].get("x-api-key") or rig.mock.requests[0]["headers"]["authorization"]
    assert resp.status_code == 429
    assert OPENAI_KEY in seen_key or ANTHROPIC_KEY in seen_key  # the upstream had the key and echoed it
    assert "x-echoed-key" not in resp.headers and not ACCOUNT_ONLY & set(resp.headers)
    assert OPENAI_KEY not in str(resp.headers) and ANTHROPIC_KEY not in str(resp.headers)
    assert resp.headers["retry-after"] == "1"  # what a CLI's retry loop reads still passes
