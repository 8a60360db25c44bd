"""The recording sits in the gateway's forwarding path and its input is the agent's: a request
nested deeper than any JSON parser's recursion, a body that is not JSON, a trial past its byte
budget, or a recording file that cannot be written never raise into the forwarding path; what
can be kept is kept (the text, the status and tokens), and the budget bounds the file."""

import json
import time

from exchange_fixtures import booked

from tasks_lib.gateway.exchange import exchange_recorder
from tasks_lib.gateway.exchange.exchange_reader import read_exchange
from tasks_lib.gateway.exchange.exchange_recorder import ExchangeRecorder
from tasks_lib.gateway.gateway_usage import TokenCount

TOKENS = TokenCount(10, 2)


def _record(recorder: ExchangeRecorder, request: bytes, reply: bytes = b"data: {}\n\n") -> None:
    recorder.record("t", "POST", "/v1/chat/completions", booked(TOKENS, request, reply), time.monotonic())


def test_deep_and_non_json_bodies_are_kept_as_text(tmp_path):
    recorder = ExchangeRecorder(lambda s: s)
    recorder.start("t", tmp_path / "x.jsonl")
    _record(recorder, b"[" * 100_000 + b"]" * 100_000)
    _record(recorder, b"\xff\xfe not json")
    first, second = read_exchange(tmp_path / "x.jsonl")
    assert first.request is None and first.request_text.startswith("[[[") and first.input_tokens == 10
    assert second.request is None and "not json" in second.request_text


def test_past_the_budget_only_status_and_tokens_are_kept(tmp_path, monkeypatch):
    monkeypatch.setattr(exchange_recorder, "MAX_TRIAL_BYTES", 10_000)
    recorder = ExchangeRecorder(lambda s: s)
    recorder.start("t", tmp_path / "x.jsonl")
    for n in range(50):
        _record(recorder, json.dumps({"messages": [{"role": "user", "content": "x" * 2000 + str(n)}]}).encode())
    entries = list(read_exchange(tmp_path / "x.jsonl"))
    assert len(entries) == 50 and entries[0].request is not None
    assert entries[-1].truncated and entries[-1].request is None and entries[-1].input_tokens == 10
    assert (tmp_path / "x.jsonl").stat().st_size < 10_000 + 50 * 400


def test_an_unwritable_recording_stops_without_raising(tmp_path):
    recorder = ExchangeRecorder(lambda s: s)
    recorder.start("t", tmp_path / "d" / "x.jsonl")
    (tmp_path / "d" / "x.jsonl").unlink()
    (tmp_path / "d" / "x.jsonl").mkdir()  # appending now fails
    _record(recorder, b"{}")
    _record(recorder, b"{}")  # the trial is no longer recorded: no second attempt, no raise
