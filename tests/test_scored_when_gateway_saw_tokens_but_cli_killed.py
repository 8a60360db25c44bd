"""A CLI that reached the model but was killed at the agent timeout before it logged any usage
is scored, with the gateway as the witness: its log has no usage line (most CLIs log usage only
when a turn or step completes), but the gateway relayed a successful model response with tokens
and the verifier wrote a reward. Before, such trials were ``invalid: harness`` ("never reached
the model") and a valid reward was thrown away.

Two ways to get there, every CLI: the model hangs on the second turn (after the tool call), and
the tool call itself blocks past the agent deadline. Which witness decides depends on when each
CLI logs usage, and is pinned per CLI: pi logs each reply as it arrives, opencode each step once
its tools ran, codex and claude-code only a whole turn — and codex's shell tool hands a
still-running command back to the model after ~10 s, so its turn completes and it exits by
itself (leaving the ``sleep`` running)."""

import pytest

from cli_model import CLIS, SOLVE, pointed_at_mock, solvable_task
from mock_model import MockModel
from task_factory import record_of

#: long enough for a slow CLI start on a loaded machine (opencode took 52 s at load 12 on 2 cores),
#: below the CLIs' own tool timeouts (120 s), which would end the blocking tool call themselves
AGENT_TIMEOUT = 100
#: every CLI in one slot of its own: the trials spend the deadline waiting (a hung reply, a
#: ``sleep``), so four at once wait it out once; two slots waited it out twice per test
CONCURRENCY = len(CLIS)
SECOND_TURN_HANGS = {"codex": "gateway", "claude-code": "gateway", "opencode": "cli_log", "pi": "cli_log"}
TOOL_BLOCKS = {"codex": "cli_log", "claude-code": "gateway", "opencode": "gateway", "pi": "cli_log"}


def _check(result, cli, witness, timed_out=True):
    rec = record_of(result, "make-done", cli)
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (cli, rec.validity, rec.agent)
    assert rec.validity.reached_model_by == witness, (cli, rec.validity, rec.agent)
    assert rec.agent.timed_out is timed_out, (cli, rec.agent)
    gw = rec.agent.gateway_usage
    assert gw.responses_with_usage >= 1 and gw.input_tokens + gw.output_tokens >= 135, (cli, gw)
    if witness == "gateway":
        assert rec.agent.usage is None or rec.agent.usage.total_tokens == 0, (cli, rec.agent.usage)
        assert rec.agent.usage_disagreement, cli  # the record says the two witnesses disagree
    return rec


@pytest.mark.docker
def test_second_turn_hangs_scored_by_gateway(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(SOLVE, hang_on=("final",))):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=AGENT_TIMEOUT), harnesses=CLIS,
                         model="mock/mock-model", concurrency=CONCURRENCY)
    for cli in CLIS:
        _check(result, cli, SECOND_TURN_HANGS[cli])
    report = (tmp_path / "jobs" / "job" / "report.md").read_text()
    assert "reached the model per the gateway" in report


@pytest.mark.docker
def test_tool_call_blocking_past_deadline_scored_by_gateway(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(SOLVE + "; sleep 600")):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=AGENT_TIMEOUT), harnesses=CLIS,
                         model="mock/mock-model", concurrency=CONCURRENCY)
    for cli in CLIS:
        _check(result, cli, TOOL_BLOCKS[cli], timed_out=cli != "codex")
