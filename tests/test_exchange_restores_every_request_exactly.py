"""``restore(delta(x))`` is ``x``, exactly: Python's ``==`` holds ``1 == 1.0 == True`` and
``0.0 == -0.0`` and ignores key order, so a recording that left out "equal" values gave back
``"stream": true`` for ``"stream": 1``. Property tests over tricky JSON values (bool vs int vs
float, -0.0, big integers, NaN, nested, unicode, lone surrogates, reordered keys), generated from
fixed seeds, first on the pure functions, then through the real recorder, its file and its reader."""

from __future__ import annotations

import json
import math
import random
import time
from typing import Any

from exchange_fixtures import booked

from tasks_lib.gateway.exchange.exchange_reader import read_exchange
from tasks_lib.gateway.exchange.exchange_recorder import ExchangeRecorder
from tasks_lib.gateway.exchange.history_delta import WINDOW, delta, restore
from tasks_lib.gateway.gateway_usage import TokenCount

#: values ``==`` confuses with each other, and strings a UTF-8 writer chokes on
TRICKY: list[Any] = [0, 0.0, -0.0, False, 1, 1.0, True, None, 2**64, 2**64 + 1, -(2**70), 1e308, 5e-324, "1",
                     "", "é", "😀", "\ud800", "\udfff", "a\udc80b", "\u0000", "\u2028", [], {}, [0], [False]]
SEEDS = range(40)


def _value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth > 3 or roll < 0.5:
        return rng.choice(TRICKY)
    if roll < 0.75:
        return [_value(rng, depth + 1) for _ in range(rng.randint(0, 3))]
    keys = rng.sample(["a", "b", "c", "role", "content", "é", "\ud800"], rng.randint(0, 4))
    return {k: _value(rng, depth + 1) for k in keys}


def _mutated(rng: random.Random, value: Any) -> Any:
    """``value`` with one leaf swapped for a value ``==`` to it but not the same JSON, when it has one."""
    twins = [[0, 0.0, -0.0, False], [1, 1.0, True]]
    if isinstance(value, (list, dict)) and value:
        copy = json.loads(json.dumps(value))
        key = rng.randrange(len(copy)) if isinstance(copy, list) else rng.choice(list(copy))
        copy[key] = _mutated(rng, copy[key])
        return copy
    if isinstance(value, (int, float)) and not (isinstance(value, float) and math.isnan(value)):
        for group in twins:
            if value == group[0]:
                return rng.choice([o for o in group if json.dumps(o) != json.dumps(value)])
    return value


def _conversation(rng: random.Random, turns: int) -> list[dict]:
    """Requests that repeat and extend a history, with top-level keys that flip to ``==`` twins
    and change order, as a hostile or odd agent's would."""
    history: list[Any] = [_value(rng) for _ in range(rng.randint(0, 3))]
    top = {"model": "m", "stream": rng.choice([True, 1, 1.0]), "temperature": rng.choice([0, 0.0, -0.0, False]),
           "tools": [_value(rng)]}
    requests = []
    for _ in range(turns):
        if rng.random() < 0.3 and history:
            i = rng.randrange(len(history))
            history = history[:i] + [_mutated(rng, history[i])] + history[i + 1:]
        history = history + [_value(rng) for _ in range(rng.randint(0, 2))]
        if rng.random() < 0.4:
            k = rng.choice(list(top))
            top[k] = _mutated(rng, top[k])
        keys = list(top) + ["messages"]
        if rng.random() < 0.3:
            rng.shuffle(keys)
        request = {k: (history if k == "messages" else top[k]) for k in keys}
        requests.append(json.loads(json.dumps(request)))  # as parsed from the wire: no shared objects
    return requests


def _exact(a: Any) -> str:
    """The document itself: types, signs, key order and surrogates all show."""
    return json.dumps(a, ensure_ascii=True)


def _wire(request: Any) -> bytes:
    """As a client sends it: UTF-8, a lone surrogate (which UTF-8 cannot hold) as its escape."""
    try:
        return json.dumps(request, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return json.dumps(request).encode()


def test_restore_of_delta_is_the_request_itself():
    for seed in SEEDS:
        rng = random.Random(seed)
        recent: dict[int, Any] = {}
        for seq, request in enumerate(_conversation(rng, 12), 1):
            stored, ref, unchanged = delta(request, "messages", recent)
            restored = restore(json.loads(json.dumps(stored)), ref, unchanged, recent)
            assert _exact(restored) == _exact(request), (seed, seq)
            recent[seq] = request
            for old in sorted(recent)[:-WINDOW]:
                del recent[old]


def test_stream_1_is_not_restored_as_true():
    first = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    second = {"model": "m", "stream": 1, "messages": [{"role": "user", "content": "hi"}, {"n": -0.0}]}
    stored, ref, unchanged = delta(second, "messages", {1: first})
    assert "stream" not in unchanged and stored["stream"] == 1
    assert _exact(restore(stored, ref, unchanged, {1: first})) == _exact(second)


def test_a_history_item_equal_but_not_the_same_is_stored_again():
    first = {"messages": [{"n": 1}, {"n": 0.0}]}
    second = {"messages": [{"n": 1.0}, {"n": -0.0}, {"n": 2}]}
    stored, ref, _ = delta(second, "messages", {1: first})
    assert ref is None or ref.keep == 0
    assert _exact(stored["messages"]) == _exact(second["messages"])


def test_recorded_and_read_back_every_request_is_the_one_sent(tmp_path):
    """Through the recorder's file and the reader: lone surrogates and big integers included."""
    recorder = ExchangeRecorder(lambda s: s)
    tokens = TokenCount(3, 1)
    for seed in SEEDS:
        path = tmp_path / f"{seed}.jsonl"
        recorder.start("t", path)
        sent = _conversation(random.Random(seed), 8)
        for request in sent:
            body = _wire(request)
            recorder.record("t", "POST", "/v1/chat/completions", booked(tokens, body, b"{}"), time.monotonic())
        got = list(read_exchange(path))
        assert [_exact(e.request) for e in got] == [_exact(r) for r in sent], seed
        assert all(e.request_unparsed is None and e.unrecorded is None for e in got)
