"""A request with a trial token reaches the upstream with the real key instead of the token, the
reply comes back unchanged, and the gateway counts requests and tokens equal to what the upstream
reported, for all three wire APIs, streaming and not. Streams are relayed as they arrive."""

import json
import threading
import time

import pytest

from gateway_helpers import ANTHROPIC_KEY, APIS, COMMAND, FINAL_TEXT, OPENAI_KEY, make_rig, rig  # noqa: F401
from mock_model import USAGE


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("api", APIS, ids=lambda a: a.name)
def test_episode_through_gateway_is_forwarded_and_counted(rig, api, stream):
    token = rig.gateway.register_trial("trial-a")
    with rig.client() as client:
        tool = client.post(api.path, headers=api.headers(token), json=api.body("tool", stream))
        final = client.post(api.path, headers=api.headers(token), json=api.body("final", stream))

    assert tool.status_code == 200 and final.status_code == 200, (tool.text, final.text)
    expected_type = "text/event-stream" if stream else "application/json"
    assert tool.headers["content-type"].startswith(expected_type)
    assert COMMAND in tool.text and FINAL_TEXT not in tool.text  # the scripted shell call ...
    assert FINAL_TEXT in final.text                                # ... then the final answer
    if not stream:
        assert tool.json()["usage"] and final.json()["usage"]

    seen = rig.mock.requests
    assert [r["reply"] for r in seen] == ["tool", "final"]
    for request, turn in zip(seen, ["tool", "final"], strict=True):
        headers = request["headers"]
        assert token not in json.dumps(headers)
        if api.family == "anthropic":
            assert headers["x-api-key"] == ANTHROPIC_KEY and "authorization" not in headers
            assert headers["anthropic-version"] == "2023-06-01"  # client headers other than auth pass on
        else:
            assert headers["authorization"] == f"Bearer {OPENAI_KEY}" and "x-api-key" not in headers
        assert request["path"] == api.path  # same path and query (claude's ?beta=true)
        assert request["body"] == api.body(turn, stream)  # body forwarded byte-exact

    usage = rig.gateway.usage("trial-a")
    (ti, to), (fi, fo) = USAGE["tool"], USAGE["final"]
    assert (usage.requests, usage.responses_with_usage) == (2, 2)
    assert (usage.input_tokens, usage.output_tokens) == (ti + fi, to + fo) == (280, 20)
    assert usage.errors == {} and usage.last_error is None


def test_streams_are_relayed_as_they_arrive_not_buffered(tmp_path):
    # 6 frames, 0.25 s apart: a buffering gateway would deliver the first byte after ~1.5 s
    with make_rig(tmp_path, mock_kwargs={"stream_delay": 0.25}) as r:
        token = r.gateway.register_trial("t")
        api = APIS[1]
        start = time.monotonic()
        arrivals = []
        with r.client() as client, client.stream("POST", api.path, headers=api.headers(token),
                                                 json=api.body("tool", True)) as resp:
            for _ in resp.iter_raw():
                arrivals.append(time.monotonic() - start)
        # relayed as they came: spread over the mock's ~1.5 s, not delivered together at the end
        # (relative to each other, so a slow start on a loaded machine does not matter)
        assert len(arrivals) >= 2 and arrivals[-1] - arrivals[0] > 1.0, arrivals
        assert r.gateway.usage("t").output_tokens == USAGE["tool"][1]


def test_side_routes_are_forwarded_and_counted_without_tokens(rig):
    token = rig.gateway.register_trial("t")
    with rig.client() as client:
        models = client.get("/v1/models", headers={"Authorization": f"Bearer {token}"})
        count = client.post("/v1/messages/count_tokens", headers={"x-api-key": token},
                            json={"model": "claude-test", "messages": [{"role": "user", "content": "hello"}]})
        side = client.post("/v1/chat/completions", headers={"Authorization": f"Bearer {token}"},
                           json={"model": "m", "messages": [{"role": "user", "content": "title?"}]})
    assert models.json()["data"][0]["id"] == "mock-model"
    assert count.json()["input_tokens"] > 0
    assert side.json()["choices"][0]["message"]["content"] == "Mock title"
    usage = rig.gateway.usage("t")
    assert (usage.requests, usage.responses_with_usage) == (3, 1)  # models and count_tokens carry no usage
    assert (usage.input_tokens, usage.output_tokens) == USAGE["side"]
    assert [r["headers"].get("x-api-key") for r in rig.mock.requests] == [None, ANTHROPIC_KEY, None]


def test_trials_are_counted_apart_and_exactly_under_concurrency(rig):
    tokens = {t: rig.gateway.register_trial(t) for t in ("t1", "t2", "t3", "t4")}
    api = APIS[2]
    errors: list = []

    def work(trial: str, n: int) -> None:
        with rig.client() as client:
            for i in range(n):
                resp = client.post(api.path, headers=api.headers(tokens[trial]), json=api.body("tool", i % 2 == 0))
                if resp.status_code != 200:
                    errors.append(resp.text)

    counts = {"t1": 12, "t2": 7, "t3": 3, "t4": 0}
    threads = [threading.Thread(target=work, args=(t, n)) for t, n in counts.items() for _ in range(2)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for trial, n in counts.items():
        usage = rig.gateway.usage(trial)
        assert usage.requests == 2 * n
        assert (usage.input_tokens, usage.output_tokens) == (2 * n * USAGE["tool"][0], 2 * n * USAGE["tool"][1])


def test_request_log_records_each_request_without_headers(rig):
    token = rig.gateway.register_trial("t")
    with rig.client() as client:
        client.post(APIS[0].path, headers=APIS[0].headers(token), json=APIS[0].body("tool", True))
    lines = [json.loads(x) for x in rig.log_path.read_text().splitlines()]
    assert len(lines) == 1
    assert lines[0] | {"time": None, "ms": None} == {
        "time": None, "ms": None, "trial": "t", "method": "POST", "path": "/v1/responses", "status": 200,
        "input_tokens": 120, "output_tokens": 15, "error": None}
    assert token not in rig.log_path.read_text()


def test_unregister_returns_final_usage_and_forgets_the_trial(rig):
    token = rig.gateway.register_trial("t")
    with rig.client() as client:
        client.post(APIS[1].path, headers=APIS[1].headers(token), json=APIS[1].body("final", False))
    final = rig.gateway.unregister_trial("t")
    assert (final.requests, final.input_tokens, final.output_tokens) == (1, 160, 5)
    from tasks_lib.gateway.model_gateway import GatewayError
    with pytest.raises(GatewayError, match="no trial 't'"):
        rig.gateway.usage("t")
