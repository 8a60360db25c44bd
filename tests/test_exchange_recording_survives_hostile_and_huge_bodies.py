"""The recording sits in the gateway's forwarding path and its input is the agent's: a request
holding a lone surrogate escape, nested deeper than any JSON parser's recursion, a body that is
not JSON or not UTF-8, a trial past its byte budget, or a recording file that cannot be written
never raise into the forwarding path nor end the trial's recording; a body that does not parse is
kept as its exact bytes with the reason, the trajectory is built from the rest with that step
marked, and the budget bounds the file."""

import json
import time

from exchange_fixtures import booked
from gateway_helpers import APIS, make_rig

from tasks_lib.gateway.exchange import exchange_recorder
from tasks_lib.gateway.exchange.exchange_json import raw_bytes
from tasks_lib.gateway.exchange.exchange_model import EXCHANGE_FILE
from tasks_lib.gateway.exchange.exchange_reader import read_exchange
from tasks_lib.gateway.exchange.exchange_recorder import ExchangeRecorder
from tasks_lib.gateway.gateway_usage import TokenCount
from tasks_lib.pricing.price_table import default_price_table
from tasks_lib.trajectory.atif_models import Agent
from tasks_lib.trajectory.build_trajectory import build_trajectory

TOKENS = TokenCount(10, 2)


def _record(recorder: ExchangeRecorder, request: bytes, reply: bytes = b"data: {}\n\n") -> None:
    recorder.record("t", "POST", "/v1/chat/completions", booked(TOKENS, request, reply), time.monotonic())


def test_a_lone_surrogate_through_the_gateway_neither_ends_the_recording_nor_changes(tmp_path):
    record = tmp_path / "trial" / EXCHANGE_FILE
    chat = APIS[1]
    odd = chat.body("tool", False)
    odd["messages"][0]["content"] = "bad \ud800 half"
    with make_rig(tmp_path) as rig:
        token = rig.gateway.register_trial("t", record_to=record)
        with rig.client() as client:
            sent = json.dumps(odd).encode()  # the escape, as a client sends it
            assert b"\\ud800" in sent
            headers = chat.headers(token) | {"content-type": "application/json"}
            assert client.post(chat.path, headers=headers, content=sent).status_code == 200
            assert client.post(chat.path, headers=headers, json=chat.body("final", False)).status_code == 200
    first, second = read_exchange(record)
    assert first.request == odd and first.request["messages"][0]["content"] == "bad \ud800 half"
    assert first.request_unparsed is None and first.unrecorded is None and first.reply is not None
    assert second.request == chat.body("final", False) and second.reply is not None


def test_bodies_that_do_not_parse_are_kept_as_their_exact_bytes(tmp_path):
    recorder = ExchangeRecorder(lambda s: s)
    recorder.start("t", tmp_path / "x.jsonl")
    deep, binary = b"[" * 100_000 + b"]" * 100_000, b"\xff\xfe not json \xed\xa0\x80"
    _record(recorder, deep)
    _record(recorder, binary, reply=b"\x00\xff")
    _record(recorder, b"null")
    first, second, third = read_exchange(tmp_path / "x.jsonl")
    assert first.request is None and raw_bytes(first.request_text) == deep and "deep" in first.request_unparsed
    assert raw_bytes(second.request_text) == binary and "UTF-8" in second.request_unparsed
    assert third.request_text == "null" and first.input_tokens == third.input_tokens == 10


def test_a_step_whose_request_did_not_parse_is_marked_and_the_rest_is_built(tmp_path):
    recorder = ExchangeRecorder(lambda s: s)
    recorder.start("t", tmp_path / "x.jsonl")
    reply = b'data: {"choices": [{"delta": {"content": "ok"}}]}\n\n'
    good = {"model": "gpt-4o", "messages": [{"role": "user", "content": "do it"}]}
    _record(recorder, json.dumps(good).encode(), reply)
    _record(recorder, b"\xff not json", reply)
    _record(recorder, json.dumps(good | {"messages": good["messages"] + [{"role": "user", "content": "more"}]}).encode(),
            reply)
    trajectory = build_trajectory(read_exchange(tmp_path / "x.jsonl"), Agent(name="h", version="1"), None,
                                  default_price_table())
    agents = [s for s in trajectory.steps if s.source == "agent"]
    assert len(agents) == 3 and all(s.message == "ok" for s in agents)
    assert "UTF-8" in agents[1].extra["request_unparsed"] and "request_unparsed" not in agents[2].extra
    assert [s.message for s in trajectory.steps if s.source == "user"] == ["do it", "more"]


def test_an_entry_that_cannot_be_built_is_recorded_bare_and_recording_goes_on(tmp_path, monkeypatch):
    recorder = ExchangeRecorder(lambda s: s)
    recorder.start("t", tmp_path / "x.jsonl")
    real_delta = exchange_recorder.delta

    def broken_once(request, field, recent):
        if request.get("boom"):
            raise RuntimeError("a bug met on an odd body")
        return real_delta(request, field, recent)

    monkeypatch.setattr(exchange_recorder, "delta", broken_once)
    _record(recorder, b'{"boom": true}')
    _record(recorder, b'{"messages": []}')
    first, second = read_exchange(tmp_path / "x.jsonl")
    assert first.unrecorded == "RuntimeError: a bug met on an odd body" and first.input_tokens == 10
    assert second.request == {"messages": []} and second.unrecorded is None


def test_an_unwritable_recording_never_raises_and_resumes_once_writable(tmp_path):
    recorder = ExchangeRecorder(lambda s: s)
    path = tmp_path / "d" / "x.jsonl"
    recorder.start("t", path)
    path.unlink()
    path.mkdir()  # appending now fails
    _record(recorder, b'{"messages": [1]}')
    path.rmdir()
    _record(recorder, b'{"messages": [1, 2]}')
    (only,) = read_exchange(path)
    assert only.seq == 2 and only.request == {"messages": [1, 2]}  # whole: its would-be base was never written


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


