"""Usage is read from upstream bodies however the bytes are split in transit, for each API's
stream and JSON form; Anthropic totals take input from ``message_start`` and output from the
last ``message_delta``; a body without usage gives None, never 0."""

import json

import pytest

from tasks_lib.gateway.gateway_usage import SseUsageParser, TokenCount, usage_from_json


def sse(*events, chat=False) -> bytes:
    out = ""
    for e in events:
        out += (f"data: {json.dumps(e)}\r\n\r\n" if chat else f"event: {e.get('type')}\ndata: {json.dumps(e)}\n\n")
    return out.encode()


ANTHROPIC = sse({"type": "message_start", "message": {"usage": {"input_tokens": 1234, "output_tokens": 1,
                                                                 "cache_read_input_tokens": 99}}},
                {"type": "content_block_delta", "delta": {"type": "text_delta", "text": "usage é"}},
                {"type": "message_delta", "usage": {"output_tokens": 40}},
                {"type": "message_delta", "usage": {"output_tokens": 57}},
                {"type": "message_stop"})
CHAT = sse({"choices": [{"delta": {"content": "hi"}}], "usage": None},
           {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 3, "total_tokens": 10}},
           chat=True) + b"data: [DONE]\r\n\r\n"
RESPONSES = sse({"type": "response.created", "response": {"usage": None}},
                {"type": "response.output_text.delta", "delta": "usage"},
                {"type": "response.completed", "response": {"usage": {"input_tokens": 500, "output_tokens": 25}}})


@pytest.mark.parametrize("body,expected", [(ANTHROPIC, TokenCount(1234, 57)), (CHAT, TokenCount(7, 3)),
                                           (RESPONSES, TokenCount(500, 25))], ids=["anthropic", "chat", "responses"])
def test_sse_usage_survives_any_split(body, expected):
    for cut in range(1, len(body)):
        parser = SseUsageParser()
        parser.feed(body[:cut])
        parser.feed(body[cut:])
        assert parser.result() == expected, cut
    bytewise = SseUsageParser()
    for i in range(len(body)):
        bytewise.feed(body[i:i + 1])
    assert bytewise.result() == expected


def test_cut_stream_reports_what_arrived():
    parser = SseUsageParser()
    parser.feed(ANTHROPIC[:ANTHROPIC.index(b"event: message_delta")])
    assert parser.result() == TokenCount(1234, 1)


def test_stream_without_trailing_blank_line_still_counts():
    parser = SseUsageParser()
    parser.feed(b'data: {"choices": [], "usage": {"prompt_tokens": 2, "completion_tokens": 1}}')
    assert parser.result() == TokenCount(2, 1)


@pytest.mark.parametrize("body,expected", [
    (b'{"usage": {"prompt_tokens": 11, "completion_tokens": 4}}', TokenCount(11, 4)),
    (b'{"usage": {"input_tokens": 8, "output_tokens": 2, "cache_creation_input_tokens": 5}}', TokenCount(8, 2)),
    (b'{"response": {"usage": {"input_tokens": 3, "output_tokens": 1}}}', TokenCount(3, 1)),
    (b'{"object": "list", "data": []}', None), (b'{"input_tokens": 12}', None), (b"not json", None),
    (b'{"usage": {"input_tokens": -5, "output_tokens": true}}', TokenCount(0, 0)),
])
def test_json_usage(body, expected):
    assert usage_from_json(body) == expected


def test_stream_without_usage_is_none():
    parser = SseUsageParser()
    parser.feed(sse({"type": "ping"}, {"type": "error", "error": {"type": "overloaded_error"}}))
    assert parser.result() is None
