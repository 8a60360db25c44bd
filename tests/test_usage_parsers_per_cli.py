"""Usage and failure lines per agent CLI, from its own event log (docs/architecture.md §5).

The lines are the ones the research recorded (its elided ``…`` fields filled in from the same
CLI versions run against the mock model), so a parser that drifts from what the CLIs really
print fails here. The 401 cases matter most: they are how a harness that never reached the
model is told apart (pi even exits 0 there), and the reason must be the CLI's own line.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harnesses.cli import usage_parsers as up
from harnesses.cli.claude_code import ClaudeCodeHarness
from harnesses.cli.codex import CodexHarness
from harnesses.cli.opencode import OpencodeHarness
from harnesses.cli.pi import PiHarness

# --- codex 0.169.0 (agent-clis.md §3.1, verbatim) ---------------------------------------------
CODEX_OK = [
    '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a53"}',
    '{"type":"item.completed","item":{"id":"item_0","type":"error","message":"Model metadata for `mock-model` not found. Defaulting to fallback metadata; this can degrade performance and cause issues."}}',
    '{"type":"turn.started"}',
    '{"type":"item.completed","item":{"id":"item_1","type":"command_execution","command":"/bin/bash -lc \'echo hi > done.txt\'","aggregated_output":"","exit_code":0,"status":"completed"}}',
    '{"type":"item.completed","item":{"id":"item_2","type":"agent_message","text":"done"}}',
    '{"type":"turn.completed","usage":{"input_tokens":280,"cached_input_tokens":0,"cache_write_input_tokens":0,"output_tokens":20,"reasoning_output_tokens":0}}',
]
CODEX_401 = [
    '{"type":"thread.started","thread_id":"0199a213-81c0-7800-8aa1-bbab2a035a54"}',
    '{"type":"turn.started"}',
    '{"type":"error","message":"Reconnecting... 1/2 (unexpected status 401 Unauthorized: Mock error 401, url: http://127.0.0.1:8765/status/401/v1/responses)"}',
    '{"type":"error","message":"unexpected status 401 Unauthorized: Mock error 401, url: http://127.0.0.1:8765/status/401/v1/responses"}',
    '{"type":"turn.failed","error":{"message":"unexpected status 401 Unauthorized: Mock error 401, url: http://127.0.0.1:8765/status/401/v1/responses"}}',
]
CODEX_REFUSED = ['{"type":"error","message":"Reconnecting... waiting for network (Connection failed: error sending request)"}'] * 3

# --- opencode 1.18.33 (§3.2) ------------------------------------------------------------------
OC_STEP = ('{{"type":"step_finish","timestamp":1795992755635,"sessionID":"ses_dd67","part":{{"id":"prt_2298",'
           '"reason":"{reason}","messageID":"msg_2298","sessionID":"ses_dd67","type":"step-finish","tokens":{{"total":{total},'
           '"input":{inp},"output":{out},"reasoning":{reasoning},"cache":{{"write":{cw},"read":{cr}}}}},"cost":{cost}}}}}')
OPENCODE_OK = [
    '{"type":"step_start","timestamp":1795992754944,"sessionID":"ses_dd67","part":{"id":"prt_1","messageID":"msg_1","sessionID":"ses_dd67","type":"step-start"}}',
    '{"type":"tool_use","timestamp":1795992755513,"sessionID":"ses_dd67","part":{"type":"tool","tool":"bash","callID":"call_mock000002","state":{"status":"completed","input":{"command":"echo hi > done.txt"},"output":"(no output)","metadata":{"exit":0}}}}',
    OC_STEP.format(reason="tool-calls", total=135, inp=120, out=15, reasoning=0, cw=0, cr=0, cost=0),
    '{"type":"text","timestamp":1795992755733,"sessionID":"ses_dd67","part":{"type":"text","text":"done"}}',
    OC_STEP.format(reason="stop", total=165, inp=160, out=5, reasoning=0, cw=0, cr=0, cost=0),
]
OPENCODE_401 = [
    '{"type":"error","timestamp":1795992763165,"sessionID":"ses_dd67","error":{"name":"APIError","data":{"message":"Mock error 401. Incorrect API key provided","statusCode":401,"isRetryable":false,"responseBody":"{\\"error\\": {\\"code\\": \\"invalid_api_key\\"}}","metadata":{"url":"http://127.0.0.1:39883/status/401/v1/chat/completions"}}}}',
]

# --- pi 0.73.1 (§3.3) -------------------------------------------------------------------------
def pi_end(usage: tuple[int, int, int, int], stop: str, content: str = "[]", error: str | None = None,
           cost: float = 0, role: str = "assistant", kind: str = "message_end") -> str:
    inp, out, cr, cw = usage
    msg = {"role": role, "content": json.loads(content), "api": "openai-completions", "provider": "tbflow",
           "model": "mock-model", "usage": {"input": inp, "output": out, "cacheRead": cr, "cacheWrite": cw,
                                            "totalTokens": inp + out + cr + cw,
                                            "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost}},
           "stopReason": stop, "timestamp": 1795992766356}
    if error:
        msg["errorMessage"] = error
    return json.dumps({"type": kind, "message": msg})


PI_OK = [
    '{"type":"session","version":3,"id":"s1","cwd":"/app"}',
    '{"type":"agent_start"}',
    pi_end((0, 0, 0, 0), "stop", role="user", content='[{"type":"text","text":"Create done.txt"}]'),
    pi_end((0, 0, 0, 0), "toolUse", kind="message_start"),
    pi_end((120, 15, 0, 0), "toolUse", content='[{"type":"toolCall","id":"call_1","name":"bash","arguments":{"command":"echo hi > done.txt"}}]'),
    '{"type":"tool_execution_end","toolCallId":"call_1","toolName":"bash","result":{"content":[{"type":"text","text":"(no output)"}]},"isError":false}',
    pi_end((160, 5, 0, 0), "stop", content='[{"type":"text","text":"done"}]'),
    pi_end((160, 5, 0, 0), "stop", content='[{"type":"text","text":"done"}]', kind="turn_end"),
]
PI_401 = [
    '{"type":"agent_start"}',
    pi_end((0, 0, 0, 0), "error", error="401 Mock error 401. Incorrect API key provided"),
    pi_end((0, 0, 0, 0), "error", error="401 Mock error 401. Incorrect API key provided", kind="turn_end"),
    '{"type":"agent_end","messages":[]}',
]
PI_REFUSED = [
    '{"type":"auto_retry_start","attempt":1,"maxAttempts":3,"delayMs":2000,"errorMessage":"Connection error."}',
    '{"type":"auto_retry_end","success":false,"attempt":3,"finalError":"Connection error."}',
]

# --- claude-code 2.1.332 (§3.4); key order as the CLI prints it (not fixed) -------------------
CLAUDE_RESULT_OK = {
    "duration_api_ms": 319, "stop_reason": "end_turn", "session_id": "799b00ec", "total_cost_usd": 0.00152,
    "usage": {"input_tokens": 280, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 20,
              "service_tier": "standard"},
    "modelUsage": {"mock-model": {"inputTokens": 280, "outputTokens": 20, "costUSD": 0.00152, "costBasis": "unknown"}},
    "terminal_reason": "completed", "is_error": False, "num_turns": 2, "subtype": "success", "api_error_status": None,
    "result": "done", "type": "result"}
CLAUDE_OK = [
    '{"type":"system","subtype":"init","cwd":"/app","tools":["Bash"],"model":"mock-model"}',
    '{"type":"assistant","message":{"model":"mock-model","usage":{"input_tokens":120,"output_tokens":1}}}',
    json.dumps(CLAUDE_RESULT_OK),
]
CLAUDE_401 = [
    '{"type":"system","subtype":"api_retry","attempt":1,"max_retries":2,"retry_delay_ms":527,"error_status":401,"error":"authentication_failed"}',
    '{"type":"assistant","message":{"model":"<synthetic>","usage":{"input_tokens":0,"output_tokens":0}}}',
    '{"duration_api_ms":0,"stop_reason":"stop_sequence","total_cost_usd":0,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0},"modelUsage":{},"terminal_reason":"api_error","is_error":true,"num_turns":1,"subtype":"success","api_error_status":401,"api_error_type":"authentication_error","result":"Failed to authenticate. API Error: 401 Mock error 401. Incorrect API key provided","type":"result"}',
]
CLAUDE_REFUSED = [
    '{"type":"result","subtype":"success","is_error":true,"terminal_reason":"api_error","api_error_status":null,"result":"API Error: Connection refused (ECONNREFUSED)","total_cost_usd":0,"usage":{"input_tokens":0,"output_tokens":0}}',
]

GARBAGE = ["", "not json at all", "[1, 2, 3]", '"a string"', "{\"type\": \"turn.completed\", \"usage\": {\"input_tok",
           "\x00\xff binary noise"]


def write(tmp_path: Path, lines: list[str], name: str = "log.jsonl") -> Path:
    path = tmp_path / name
    path.write_bytes("\n".join(lines).encode("utf-8", errors="surrogateescape") + b"\n")
    return path


@pytest.mark.parametrize("usage, lines, expect", [
    (up.codex_usage, CODEX_OK, (280, 20)),
    (up.opencode_usage, OPENCODE_OK, (280, 20)),
    (up.pi_usage, PI_OK, (280, 20)),
    (up.claude_usage, CLAUDE_OK, (280, 20)),
], ids=["codex", "opencode", "pi", "claude"])
def test_success_logs_sum_to_the_mock_usage(tmp_path, usage, lines, expect):
    u = usage(write(tmp_path, lines))
    assert (u.input_tokens, u.output_tokens) == expect
    assert u.total_tokens == 300


@pytest.mark.parametrize("usage, error, lines, reason", [
    (up.codex_usage, up.codex_error, CODEX_401, "unexpected status 401 Unauthorized: Mock error 401"),
    (up.opencode_usage, up.opencode_error, OPENCODE_401, "Mock error 401. Incorrect API key provided"),
    (up.pi_usage, up.pi_error, PI_401, "401 Mock error 401. Incorrect API key provided"),
    (up.claude_usage, up.claude_error, CLAUDE_401, "Failed to authenticate. API Error: 401 Mock error 401"),
], ids=["codex", "opencode", "pi", "claude"])
def test_401_logs_show_no_tokens_and_the_clis_own_reason(tmp_path, usage, error, lines, reason):
    log = write(tmp_path, lines)
    u = usage(log)
    assert u is None or u.total_tokens == 0
    assert error(log).startswith(reason)


def test_pi_401_is_zero_usage_not_absent(tmp_path):
    """pi exits 0 after a 401; its assistant message_end says zero, which must stay visible."""
    u = up.pi_usage(write(tmp_path, PI_401))
    assert u is not None and (u.input_tokens, u.output_tokens, u.cost_usd) == (0, 0, None)


def test_connection_refused_reasons(tmp_path):
    assert up.codex_error(write(tmp_path, CODEX_REFUSED, "c")).startswith("Reconnecting... waiting for network")
    assert up.codex_usage(write(tmp_path, CODEX_REFUSED, "c")) is None
    assert up.pi_error(write(tmp_path, PI_REFUSED, "p")) == "Connection error."
    assert up.pi_usage(write(tmp_path, PI_REFUSED, "p")) is None
    assert up.claude_error(write(tmp_path, CLAUDE_REFUSED, "cl")) == "API Error: Connection refused (ECONNREFUSED)"


def test_successful_runs_have_no_error_line(tmp_path):
    """codex's "Model metadata … not found" item is a warning every custom model gets, not a failure."""
    assert up.codex_error(write(tmp_path, CODEX_OK, "a")) is None
    assert up.opencode_error(write(tmp_path, OPENCODE_OK, "b")) is None
    assert up.pi_error(write(tmp_path, PI_OK, "c")) is None
    assert up.claude_error(write(tmp_path, CLAUDE_OK, "d")) is None


@pytest.mark.parametrize("usage, lines, cut_at, partial", [
    (up.codex_usage, CODEX_OK, 5, None),  # codex and claude report once, at the end
    (up.opencode_usage, OPENCODE_OK, 4, 135),  # per-step usage: the first step's survives
    (up.pi_usage, PI_OK, 6, 135),
    (up.claude_usage, CLAUDE_OK, 2, None),
], ids=["codex", "opencode", "pi", "claude"])
def test_garbage_and_a_line_cut_mid_write_are_skipped(tmp_path, usage, lines, cut_at, partial):
    u = usage(write(tmp_path, GARBAGE[:3] + lines + GARBAGE[3:]))
    assert (u.input_tokens, u.output_tokens) == (280, 20)
    # the CLI killed while writing its last usage line: what was complete still counts
    cut = usage(write(tmp_path, lines[:cut_at] + [lines[cut_at][: len(lines[cut_at]) // 2]], "cut.jsonl"))
    assert (cut.total_tokens if cut else None) == partial


def test_missing_or_empty_log_reports_nothing(tmp_path):
    for usage, error in [(up.codex_usage, up.codex_error), (up.opencode_usage, up.opencode_error),
                         (up.pi_usage, up.pi_error), (up.claude_usage, up.claude_error)]:
        assert usage(tmp_path / "absent.jsonl") is None and error(tmp_path / "absent.jsonl") is None
        assert usage(write(tmp_path, GARBAGE, "g.jsonl")) is None


def test_cache_and_reasoning_tokens_are_counted_the_same_way_everywhere(tmp_path):
    """input = all prompt tokens incl. cache reads/writes; output = all generated incl. reasoning."""
    codex = up.codex_usage(write(tmp_path, ['{"type":"turn.completed","usage":{"input_tokens":1000,"cached_input_tokens":800,"output_tokens":50,"reasoning_output_tokens":30}}'], "a"))
    assert (codex.input_tokens, codex.output_tokens) == (1000, 50)  # cached already inside input, reasoning inside output
    oc = up.opencode_usage(write(tmp_path, [OC_STEP.format(reason="stop", total=1050, inp=150, out=20, reasoning=30, cw=50, cr=800, cost=0)], "b"))
    assert (oc.input_tokens, oc.output_tokens) == (1000, 50)  # opencode subtracts cache and reasoning: added back
    pi = up.pi_usage(write(tmp_path, [pi_end((150, 50, 800, 50), "stop")], "c"))
    assert (pi.input_tokens, pi.output_tokens) == (1000, 50)
    result = dict(CLAUDE_RESULT_OK, usage={"input_tokens": 150, "cache_creation_input_tokens": 50,
                                           "cache_read_input_tokens": 800, "output_tokens": 50})
    cl = up.claude_usage(write(tmp_path, [json.dumps(result)], "d"))
    assert (cl.input_tokens, cl.output_tokens) == (1000, 50)


def test_cost_is_the_clis_figure_or_none_never_zero(tmp_path):
    assert up.codex_usage(write(tmp_path, CODEX_OK, "a")).cost_usd is None  # codex reports none
    assert up.opencode_usage(write(tmp_path, OPENCODE_OK, "b")).cost_usd is None  # 0 = no price table
    priced = [OC_STEP.format(reason="stop", total=165, inp=160, out=5, reasoning=0, cw=0, cr=0, cost=0.0021)] * 2
    assert up.opencode_usage(write(tmp_path, priced, "c")).cost_usd == pytest.approx(0.0042)
    assert up.pi_usage(write(tmp_path, PI_OK, "d")).cost_usd is None
    assert up.pi_usage(write(tmp_path, [pi_end((100, 10, 0, 0), "stop", cost=0.5)], "e")).cost_usd == 0.5
    # claude guessed a price for the unknown mock model ("costBasis": "unknown"): not a cost
    assert up.claude_usage(write(tmp_path, CLAUDE_OK, "f")).cost_usd is None
    listed = dict(CLAUDE_RESULT_OK, modelUsage={"claude-sonnet-4-5": {"costUSD": 0.00152, "costBasis": "list"}})
    assert up.claude_usage(write(tmp_path, [json.dumps(listed)], "g")).cost_usd == 0.00152
    assert up.claude_usage(write(tmp_path, CLAUDE_401, "h")).cost_usd is None  # reported 0 → unknown


def test_claude_uses_only_the_final_result_not_assistant_events(tmp_path):
    """assistant events carry message_start usage (output_tokens: 1); summing them would be wrong."""
    u = up.claude_usage(write(tmp_path, CLAUDE_OK[:2]))
    assert u is None


def test_long_error_lines_are_clipped_to_one_line(tmp_path):
    long = "x" * 5000
    line = up.opencode_error(write(tmp_path, [json.dumps({"type": "error", "error": {"name": "APIError", "data": {"message": "a\nb " + long}}})]))
    assert line.startswith("a b xxx") and len(line) == up.MAX_ERROR_LINE and "\n" not in line


@pytest.mark.parametrize("harness, name, lines", [
    (CodexHarness, "codex.jsonl", CODEX_OK), (OpencodeHarness, "opencode.jsonl", OPENCODE_OK),
    (PiHarness, "pi.jsonl", PI_OK), (ClaudeCodeHarness, "claude.jsonl", CLAUDE_OK),
], ids=["codex", "opencode", "pi", "claude-code"])
def test_harness_reads_its_own_stdout_log_only(tmp_path, harness, name, lines):
    h = harness()
    assert h.stdout_name == name and h.stderr_name == name.replace(".jsonl", ".stderr.log")
    write(tmp_path, lines, name)
    # a stderr log full of usage-looking lines must not count
    write(tmp_path, CODEX_OK + OPENCODE_OK + PI_OK + CLAUDE_OK, h.stderr_name)
    u = h.parse_usage(tmp_path)
    assert (u.input_tokens, u.output_tokens) == (280, 20)
    assert h.error_line(tmp_path) is None
    assert h.parse_usage(tmp_path / "nowhere") is None
