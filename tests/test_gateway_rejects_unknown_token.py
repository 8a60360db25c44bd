"""Only a registered trial's token opens the gateway: a missing, unknown, revoked or replaced
token gets a 401 in the API's own error shape and nothing reaches the upstream; a valid token
reaches only the model routes, never the account's other APIs."""

import pytest

from gateway_helpers import APIS, rig  # noqa: F401


def _post(rig, api, token):
    with rig.client() as client:
        return client.post(api.path, headers=api.headers(token), json=api.body("tool", False))


@pytest.mark.parametrize("api", APIS, ids=lambda a: a.name)
def test_missing_and_unknown_tokens_get_401_in_the_api_shape(rig, api):
    rig.gateway.register_trial("real-trial")
    for token in (None, "sk-tbflow-made-up", ""):
        resp = _post(rig, api, token)
        assert resp.status_code == 401
        if api.family == "anthropic":
            assert resp.json() == {"type": "error", "error": {
                "type": "authentication_error", "message": "tbflow gateway: missing or unknown trial token"}}
        else:
            assert resp.json()["error"]["code"] == "invalid_api_key"
            assert resp.json()["error"]["message"] == "tbflow gateway: missing or unknown trial token"
    assert rig.mock.requests == []
    assert rig.gateway.rejected == 3
    assert rig.gateway.usage("real-trial").requests == 0


def test_token_of_an_unregistered_trial_is_refused(rig):
    old = rig.gateway.register_trial("finished")
    live = rig.gateway.register_trial("running")
    rig.gateway.unregister_trial("finished")
    assert _post(rig, APIS[1], old).status_code == 401
    assert _post(rig, APIS[1], live).status_code == 200
    assert [r["reply"] for r in rig.mock.requests] == ["tool"]
    assert rig.gateway.usage("running").requests == 1


def test_registering_again_revokes_the_previous_token(rig):
    first = rig.gateway.register_trial("t")
    second = rig.gateway.register_trial("t")
    assert first != second
    assert _post(rig, APIS[0], first).status_code == 401
    assert _post(rig, APIS[0], second).status_code == 200


def test_a_token_works_with_either_auth_header(rig):
    token = rig.gateway.register_trial("t")
    with rig.client() as client:
        bearer = client.post("/v1/messages", headers={"Authorization": f"Bearer {token}"},
                             json=APIS[2].body("tool", False))
        x_api_key = client.post("/v1/chat/completions", headers={"x-api-key": token},
                                json=APIS[1].body("tool", False))
    assert (bearer.status_code, x_api_key.status_code) == (200, 200)


@pytest.mark.parametrize("method,path", [
    ("GET", "/v1/files"), ("POST", "/v1/fine_tuning/jobs"), ("DELETE", "/v1/models/gpt-4"),
    ("POST", "/v1/../v1/files"), ("POST", "/v1/responses/../files"), ("GET", "/v1/responses"),
    ("POST", "/responses"), ("GET", "/v1/organization/api_keys"),
])
def test_valid_token_reaches_only_model_routes(rig, method, path):
    token = rig.gateway.register_trial("t")
    with rig.client() as client:
        resp = client.request(method, path, headers={"Authorization": f"Bearer {token}"}, json={})
    assert resp.status_code == 404
    assert "tbflow gateway does not forward" in resp.json()["error"]["message"]
    assert rig.mock.requests == []
    assert rig.gateway.usage("t").errors == {404: 1}
