"""A verifier's reward.json nested thousands deep (``[`` * 5000 + ``]`` * 5000, 10 KB) raised
``RecursionError`` out of reward parsing: the trial ended as status error ("a bug in tbflow") and
every resume ran it again. It is now a reading problem (no usable reward, ``invalid: verifier``)
like any malformed reward file, refused before ``json.loads`` runs (tasks_lib/safe_json.py); the
same bound keeps the agent CLIs' event-log parsers from raising on such a line."""

from __future__ import annotations

import json
import sys

import pytest

from harnesses.cli import usage_parsers
from harnesses.tbflow_agent.events import EVENT_LOG, usage_of
from task_factory import make_task, record_of
from tasks_lib.safe_json import MAX_DEPTH, JsonRefused, loads_bounded, nesting_depth
from tasks_lib.judge.rewards import REWARD_MAX_BYTES, read_reward_bytes, read_rewards

DEEP = "[" * 5000 + "]" * 5000
DEEP_OBJECT = '{"reward": ' + '{"a": ' * 3000 + "1" + "}" * 3000 + "}"


@pytest.mark.parametrize("doc", [DEEP, DEEP_OBJECT, "[" * 5000, '{"reward": 1, "x": ' + "[" * 1500 + "]" * 1500 + "}"],
                         ids=["arrays", "objects", "unclosed", "deep-beside-a-reward"])
def test_deeply_nested_reward_json_is_a_problem_not_an_exception(doc):
    r = read_reward_bytes(None, doc.encode())
    assert r.reward is None and r.problem and "nested" in r.problem, r
    assert r.problem.startswith("reward.json is not a usable JSON document: nested "), r.problem


def _stack_depth() -> int:
    frame, n = sys._getframe(), 0
    while frame is not None:
        frame, n = frame.f_back, n + 1
    return n


def test_nesting_is_refused_whatever_stack_the_caller_already_uses():
    def deep(n):
        return deep(n - 1) if n else read_reward_bytes(None, ("[" * 150 + "]" * 150).encode())
    # 60 frames left: json.loads alone would raise RecursionError on these 150 levels
    r = deep(sys.getrecursionlimit() - _stack_depth() - 60)
    assert r.reward is None and r.problem, r


@pytest.mark.parametrize("doc, result", [
    ('{"reward": 1}', (1.0, None)),
    ('{"reward": 0.5, "style": 1}', (0.5, None)),
    ('{"reward": 1, "detail": {"a": {"b": 1}}}', (None, "reward.json['detail'] is not a number: {'a': {'b': 1}}")),
    ('{"reward": "[[[["}', (None, "reward.json['reward'] is not a number: '[[[['")),
    ("{not json", (None, "reward.json is not JSON: Expecting property name enclosed in double quotes: "
                         "line 1 column 2 (char 1)")),
])
def test_shallow_reward_json_reads_as_before(doc, result):
    r = read_reward_bytes(None, doc.encode())
    assert (r.reward, r.problem) == result


def test_reward_files_over_the_cap_are_a_problem(tmp_path):
    (tmp_path / "reward.json").write_text('{"reward": 1, "pad": "' + "x" * REWARD_MAX_BYTES + '"}')
    r = read_rewards(tmp_path)
    assert r.reward is None and r.problem == f"reward.json is larger than {REWARD_MAX_BYTES} bytes"
    r = read_reward_bytes(b"1" + b" " * REWARD_MAX_BYTES, None)
    assert r.reward is None and r.problem == f"reward.txt is larger than {REWARD_MAX_BYTES} bytes"


def test_an_integer_of_thousands_of_digits_is_a_problem():
    r = read_reward_bytes(None, ('{"reward": ' + "1" * 5000 + "}").encode())
    assert r.reward is None and r.problem.startswith("reward.json is not JSON: "), r


@pytest.mark.parametrize("doc", ['"[[["', '["\\"[[", {"a": "]]]{"}]', "[[1], [2, [3]]]", "{}", "7", '"x\\\\"'])
def test_depth_counts_brackets_outside_strings_only(doc):
    expected = {'"[[["': 0, '["\\"[[", {"a": "]]]{"}]': 2, "[[1], [2, [3]]]": 3, "{}": 1, "7": 0, '"x\\\\"': 0}[doc]
    assert nesting_depth(doc) == expected
    assert loads_bounded(doc) == json.loads(doc)


def test_bounds_raise_value_errors_only():
    with pytest.raises(JsonRefused):
        loads_bounded("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    assert loads_bounded("[" * MAX_DEPTH + "]" * MAX_DEPTH) == json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)
    with pytest.raises(JsonRefused):
        loads_bounded("[1, 2]", max_chars=5)
    assert issubclass(JsonRefused, ValueError)


def test_agent_event_logs_with_a_deeply_nested_line_still_give_their_usage(tmp_path):
    usage = {"type": "turn.completed", "usage": {"input_tokens": 160, "output_tokens": 5}}
    log = tmp_path / "codex.jsonl"
    log.write_text('{"x": ' + DEEP + "}\n" + json.dumps(usage) + "\n")
    got = usage_parsers.codex_usage(log)
    assert got is not None and (got.input_tokens, got.output_tokens) == (160, 5)
    (tmp_path / EVENT_LOG).write_text('{"x": ' + DEEP + "}\n"
                                      + json.dumps({"type": "model", "usage": {"input_tokens": 3, "output_tokens": 4}}) + "\n")
    got = usage_of(tmp_path)
    assert got is not None and (got.input_tokens, got.output_tokens) == (3, 4)


@pytest.mark.docker
def test_trial_whose_test_sh_writes_a_deeply_nested_reward_json_is_invalid_verifier(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "deep-reward", test_sh="#!/bin/bash\n"
                                         "python3 -c 'print(\"[\" * 5000 + \"]\" * 5000)' > /logs/verifier/reward.json\n")
    rec = record_of(run_job(ds), "deep-reward")
    assert (rec.validity.status, rec.validity.kind) == ("invalid", "verifier"), rec.validity
    assert "reward.json is not a usable JSON document: nested 5000 levels deep" in rec.validity.reason, rec.validity
