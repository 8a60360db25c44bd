"""The pure parts of tbflow-agent and the host-agent contract, without Docker: a tool's output is
bounded to its head and tail with what was left out said; the time left reads as minutes and
seconds; a command that was cut off, cut short or could not run says so; usage and the error line
come from the event log even when its last line was cut mid-write; a host plug-in's ``run`` bug
becomes a ``HarnessPluginError`` with its traceback, and a host harness has no command."""

import json

import pytest

from harnesses.plugin_guard import GuardedHostHarness, guarded
from harnesses.tbflow_agent.events import EventLog, error_of, usage_of
from harnesses.tbflow_agent.harness import TbflowAgentHarness
from harnesses.tbflow_agent.tools import bound_output, result_text, time_left_text
from tasks_lib.errors import HarnessPluginError
from tasks_lib.records.harness_source import HarnessSource
from tasks_lib.trial.host_agent_api import ExecOutput, HostHarness


def test_long_output_keeps_head_and_tail_and_says_how_much_was_left_out():
    text = "A" * 6000 + "B" * 6000
    out = bound_output(text, 10_000)
    assert out.startswith("A" * 5000) and out.endswith("B" * 5000)
    assert "[... 2000 characters left out ...]" in out
    assert bound_output("short", 10) == "short" and bound_output("x" * 10, 10) == "x" * 10


def test_time_left_reads_as_hours_minutes_seconds_never_negative():
    assert time_left_text(3723.9) == "[time left: 1h 02m 03s]"
    assert time_left_text(125) == "[time left: 2m 05s]"
    assert time_left_text(9.5) == "[time left: 9s]"
    assert time_left_text(-4) == "[time left: 0s]"


def test_tool_result_says_timeout_truncation_and_tbflow_failures():
    cut = result_text(ExecOutput(exit_code=137, output="zz", timed_out=True, duration_sec=30.2), 12)
    assert cut.startswith("the command was killed after 30 s (timeout)\nzz") and cut.endswith("[time left: 12s]")
    big = result_text(ExecOutput(exit_code=0, output="x" * 10, truncated=True, output_bytes=5_000_000), 60)
    assert "exit code 0" in big and "5000000 bytes; only its first 10 came back" in big
    broke = result_text(ExecOutput(exit_code=None, output="", error="container is not running"), 1)
    assert broke.startswith("tbflow could not run the command: container is not running")


def test_usage_and_error_line_come_from_the_event_log_even_when_cut_mid_write(tmp_path):
    assert usage_of(tmp_path) is None and error_of(tmp_path) is None
    log = EventLog(tmp_path / "events.jsonl")
    log.write("model", turn=1, usage={"input_tokens": 120, "output_tokens": 15})
    log.write("model", turn=2, usage={"input_tokens": 160, "output_tokens": 5})
    log.write("error", turn=3, message="model request failed: HTTP 429: slow down")
    log.close()
    with (tmp_path / "events.jsonl").open("a") as fh:
        fh.write(json.dumps({"type": "model", "usage": {"input_tokens": 9}})[:20])  # cut off mid-line
    usage = usage_of(tmp_path)
    assert (usage.input_tokens, usage.output_tokens) == (280, 20)
    assert error_of(tmp_path) == "model request failed: HTTP 429: slow down"
    h = TbflowAgentHarness()
    assert h.parse_usage(tmp_path) == usage and h.kind == "model" and h.wire_api == "openai-chat"


class _Raising(HostHarness):
    name, version, kind = "boom", "1", "model"
    event_log_name = "mine.jsonl"

    def prepare(self, task):
        raise AssertionError("not called")

    def run(self, session):
        raise KeyError("bad turn")


def test_host_plugin_run_bug_becomes_a_plugin_error_with_its_traceback():
    h = guarded(_Raising(), HarnessSource(origin="file", reference="x.py:X", target="x.py:X"))
    assert isinstance(h, GuardedHostHarness) and isinstance(h, HostHarness)
    assert h.event_log_name == "mine.jsonl"
    with pytest.raises(HarnessPluginError) as caught:
        h.run(None)  # type: ignore[arg-type]
    assert caught.value.stage == "run-agent" and "plug-in harness boom raised KeyError" in str(caught.value)
    assert "KeyError: 'bad turn'" in caught.value.traceback_text
    with pytest.raises(TypeError, match="host-side harness"):
        _Raising().command(None, None, None)  # type: ignore[arg-type]
