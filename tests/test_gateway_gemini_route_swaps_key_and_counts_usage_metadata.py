"""The Gemini route (``/v1beta/models/<model>:generateContent`` and ``:streamGenerateContent``):
the trial token is taken from ``x-goog-api-key`` or the ``key=`` query parameter and never goes
upstream, the real key does (as ``x-goog-api-key``), and usage is counted from ``usageMetadata``
like the other routes' usage: from the JSON reply, the SSE stream and a stream sent as a JSON
array. A missing token is a 401 in Google's error shape; other Gemini paths are not forwarded."""

import json

import pytest

from gateway_helpers import COMMAND, FINAL_TEXT, GEMINI, GEMINI_JSON, GEMINI_KEY, make_rig, rig  # noqa: F401
from mock_model import USAGE
from tasks_lib.gateway.gateway_usage import SseUsageParser, usage_from_json

ARRAY = "/v1beta/models/gemini-test:streamGenerateContent"


@pytest.mark.parametrize("path", [GEMINI.path, GEMINI_JSON.path, ARRAY], ids=["sse", "json", "array"])
def test_gemini_episode_is_forwarded_with_the_real_key_and_counted(rig, path):
    token = rig.gateway.register_trial("g")
    with rig.client() as client:
        tool = client.post(path, headers=GEMINI.headers(token), json=GEMINI.body("tool", True))
        final = client.post(path, headers=GEMINI.headers(token), json=GEMINI.body("final", True))
    assert tool.status_code == 200 and final.status_code == 200, (tool.text, final.text)
    assert COMMAND in tool.text and "functionCall" in tool.text and FINAL_TEXT in final.text
    if path == GEMINI.path:
        assert tool.headers["content-type"].startswith("text/event-stream")
    for request in rig.mock.requests:
        assert request["headers"]["x-goog-api-key"] == GEMINI_KEY
        assert token not in json.dumps(request["headers"]) and "authorization" not in request["headers"]
        assert request["path"] == path
    usage = rig.gateway.usage("g")
    (ti, to), (fi, fo) = USAGE["tool"], USAGE["final"]
    assert (usage.requests, usage.responses_with_usage) == (2, 2)
    assert (usage.input_tokens, usage.output_tokens) == (ti + fi, to + fo)


def test_token_in_the_key_query_parameter_is_accepted_and_stripped(rig):
    token = rig.gateway.register_trial("g")
    with rig.client() as client:
        resp = client.post(f"{GEMINI.path}&key={token}", json=GEMINI.body("tool", True))
    assert resp.status_code == 200, resp.text
    (request,) = rig.mock.requests
    assert request["path"] == GEMINI.path  # alt=sse kept, key= gone
    assert token not in json.dumps(request) and request["headers"]["x-goog-api-key"] == GEMINI_KEY
    assert rig.gateway.usage("g").responses_with_usage == 1


def test_missing_token_is_a_401_in_googles_shape_and_never_forwarded(rig):
    rig.gateway.register_trial("g")
    with rig.client() as client:
        resp = client.post(GEMINI.path, json=GEMINI.body("tool", True))
        other = client.post("/v1beta/files", headers=GEMINI.headers(rig.gateway.register_trial("h")), json={})
    assert resp.status_code == 401
    assert resp.json()["error"]["status"] == "UNAUTHENTICATED" and resp.json()["error"]["code"] == 401
    assert other.status_code == 404 and "does not forward" in other.json()["error"]["message"]
    assert rig.mock.requests == []


def test_usage_metadata_counts_thoughts_as_output_and_the_last_stream_chunk_wins():
    meta = {"promptTokenCount": 10, "candidatesTokenCount": 4, "thoughtsTokenCount": 6, "totalTokenCount": 20}
    got = usage_from_json(json.dumps({"usageMetadata": meta}).encode())
    assert (got.input_tokens, got.output_tokens) == (10, 10)
    parser = SseUsageParser()
    early = dict(meta, candidatesTokenCount=1, thoughtsTokenCount=0)
    parser.feed(f"data: {json.dumps({'usageMetadata': early})}\r\n\r\n".encode())
    parser.feed(f"data: {json.dumps({'usageMetadata': meta})}\r\n\r\n".encode())
    last = parser.result()
    assert (last.input_tokens, last.output_tokens) == (10, 10)
