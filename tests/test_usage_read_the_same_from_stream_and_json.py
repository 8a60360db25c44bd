"""The gateway's usage readers (``SseUsageParser`` for streams, ``usage_from_json`` for whole
replies) read the same token counts from each API's streamed and non-streamed form of one reply:
a CLI that switches between streaming and not is counted the same."""

import httpx
import pytest

from gateway_helpers import APIS
from mock_model import MockModel, USAGE
from tasks_lib.gateway.gateway_usage import SseUsageParser, TokenCount, usage_from_json


@pytest.fixture(scope="module")
def mock():
    with MockModel("touch /app/x") as m:
        yield m


@pytest.mark.parametrize("turn,kind", [("tool", "tool"), ("final", "final")])
@pytest.mark.parametrize("api", APIS, ids=lambda a: a.name)
def test_stream_and_json_forms_of_one_reply_read_the_same_usage(mock, api, turn, kind):
    with httpx.Client(base_url=mock.base_url) as client:
        whole = client.post(api.path, json=api.body(turn, False))
        stream = client.post(api.path, json=api.body(turn, True))
    assert stream.headers["content-type"] == "text/event-stream"
    parser = SseUsageParser()
    parser.feed(stream.content)
    assert usage_from_json(whole.content) == parser.result() == TokenCount(*USAGE[kind])
