"""The mock's failure modes look like the providers': ``/status/<code>/`` answers that status in
the OpenAI shape, or Anthropic's under ``/messages``, for every route and streaming or not;
``/hang/`` accepts the request and never answers until the mock stops."""

import threading
import time

import httpx
import pytest

from mock_model import MockModel


@pytest.fixture
def mock():
    with MockModel() as m:
        yield m


@pytest.mark.parametrize("code,a_type,o_type,o_code", [
    (401, "authentication_error", "invalid_request_error", "invalid_api_key"),
    (429, "rate_limit_error", "requests", "rate_limit_exceeded"),
    (500, "api_error", "server_error", None),
])
def test_status_prefix_answers_in_each_api_shape(mock, code, a_type, o_type, o_code):
    with httpx.Client(base_url=f"{mock.base_url}/status/{code}") as client:
        anthropic = client.post("/v1/messages?beta=true", headers={"x-api-key": "sk-ant-x"},
                                json={"model": "c", "stream": True, "messages": []})
        responses = client.post("/v1/responses", headers={"Authorization": "Bearer sk-x"},
                                json={"model": "g", "stream": True, "input": "hi"})
        chat = client.post("/v1/chat/completions", json={"model": "g", "messages": []})
    for resp in (anthropic, responses, chat):
        assert resp.status_code == code
        assert resp.headers["content-type"] == "application/json"
    assert anthropic.json() == {"type": "error", "error": {
        "type": a_type, "message": f"Mock error {code}. Incorrect API key provided: sk-ant-x"}}
    assert responses.json() == {"error": {"message": f"Mock error {code}. Incorrect API key provided: sk-x",
                                          "type": o_type, "param": None, "code": o_code}}
    assert chat.json()["error"]["type"] == o_type
    assert [r["reply"] for r in mock.requests] == [f"status:{code}"] * 3


def test_hang_never_answers_until_stop(tmp_path):
    mock = MockModel(log_path=tmp_path / "mock.jsonl").start()
    outcome: dict = {}

    def call() -> None:
        start = time.monotonic()
        try:
            httpx.post(f"{mock.base_url}/hang/v1/chat/completions", json={"model": "m", "messages": []}, timeout=30)
            outcome["answer"] = True
        except httpx.HTTPError as exc:
            outcome["error"] = type(exc).__name__
        outcome["took"] = time.monotonic() - start

    try:
        thread = threading.Thread(target=call)
        thread.start()
        deadline = time.monotonic() + 10
        while not mock.requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [r["reply"] for r in mock.requests] == ["hang"]
        thread.join(1.0)
        assert thread.is_alive()  # still waiting 1 s after the mock got it: no answer, no close
    finally:
        mock.stop()
    thread.join(5)
    assert not thread.is_alive() and "answer" not in outcome  # stop closes it without a reply
    assert outcome["error"] == "RemoteProtocolError"
    assert '"reply": "hang"' in (tmp_path / "mock.jsonl").read_text()


def test_client_timeout_against_hang_is_a_read_timeout(mock):
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{mock.base_url}/hang/v1/messages", json={}, timeout=0.3)


def test_unknown_route_and_bad_json_are_errors_not_replies(mock):
    with httpx.Client(base_url=mock.base_url) as client:
        missing = client.post("/v1/embeddings", json={"input": "x"})
        bad = client.post("/v1/chat/completions", content=b"{not json", headers={"content-type": "application/json"})
    assert missing.status_code == 404 and "no route" in missing.json()["error"]["message"]
    assert bad.status_code == 400
