"""Upstream errors reach the CLI with their own status and body (429 and 500 must stay retryable
as such), and are booked per trial; a hung upstream ends in a 504 after the read timeout
instead of holding the request (and a thread) forever."""

import time

import httpx
import pytest

from gateway_helpers import APIS, make_rig


@pytest.mark.parametrize("status", [429, 500])
@pytest.mark.parametrize("api", APIS, ids=lambda a: a.name)
def test_upstream_error_passes_through_with_status_and_shape(tmp_path, api, status):
    with make_rig(tmp_path, prefix=f"/status/{status}") as rig:
        token = rig.gateway.register_trial("t")
        with rig.client() as client:
            resp = client.post(api.path, headers=api.headers(token), json=api.body("tool", True))
        assert resp.status_code == status
        body = resp.json()
        if api.family == "anthropic":
            assert body["type"] == "error"
            assert body["error"]["type"] == {429: "rate_limit_error", 500: "api_error"}[status]
        else:
            assert body["error"]["type"] == {429: "requests", 500: "server_error"}[status]
        usage = rig.gateway.usage("t")
        assert (usage.requests, usage.errors, usage.total_tokens) == (1, {status: 1}, 0)
        assert usage.last_error.startswith(f"upstream {status}: Mock error {status}.")


@pytest.mark.parametrize("api", [APIS[0], APIS[2]], ids=lambda a: a.name)
def test_hung_upstream_ends_in_504_after_the_read_timeout(tmp_path, api):
    with make_rig(tmp_path, prefix="/hang", read_timeout_sec=0.5) as rig:
        token = rig.gateway.register_trial("t")
        start = time.monotonic()
        with rig.client(timeout=10) as client:
            resp = client.post(api.path, headers=api.headers(token), json=api.body("tool", True))
        took = time.monotonic() - start
        assert resp.status_code == 504
        assert took > 0.4, took  # it waited the read timeout (not forever: the client's 10 s would raise)
        assert "did not answer within 0.5 s" in resp.text
        if api.family == "anthropic":
            assert resp.json()["error"]["type"] == "timeout_error"
        assert rig.gateway.usage("t").errors == {504: 1}
        assert [r["reply"] for r in rig.mock.requests] == ["hang"]


def test_upstream_stalling_mid_stream_cuts_the_stream_and_keeps_the_usage_seen(tmp_path):
    # frames 1 s apart, read timeout 0.4 s: the first frame arrives, then the upstream "stalls"
    with make_rig(tmp_path, mock_kwargs={"stream_delay": 1.0}, read_timeout_sec=0.4) as rig:
        token = rig.gateway.register_trial("t")
        api = APIS[2]
        got = b""
        with rig.client() as client, client.stream("POST", api.path, headers=api.headers(token),
                                                   json=api.body("tool", True)) as resp:
            assert resp.status_code == 200  # headers were already sent: only a cut can signal it
            with pytest.raises(httpx.TransportError):
                for chunk in resp.iter_raw():
                    got += chunk
        assert b"message_start" in got and b"message_stop" not in got
        usage = rig.gateway.usage("t")
        assert usage.errors == {504: 1}
        assert usage.input_tokens == 120  # message_start arrived before the stall
