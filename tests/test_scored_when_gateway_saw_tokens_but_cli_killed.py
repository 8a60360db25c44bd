"""A CLI that reached the model but was killed at the agent timeout before it logged any usage
is scored, with the gateway as the witness: its log has no usage line (CLIs log usage only when
a turn or step completes), but the gateway relayed a successful model response with tokens and
the verifier wrote a reward. Before, such trials were ``invalid: harness`` ("never reached the
model") and a valid reward was thrown away.

Two ways to get there, every CLI: the model hangs on the second turn (after the tool call), and
the tool call itself blocks past the agent deadline."""

import pytest

from cli_model import CLIS, SOLVE, pointed_at_mock, solvable_task
from mock_model import MockModel
from task_factory import record_of

AGENT_TIMEOUT = 25


def _assert_scored_by_gateway(result, cli):
    rec = record_of(result, "make-done", cli)
    assert rec.agent.timed_out, (cli, rec.agent)
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (cli, rec.validity, rec.agent)
    assert rec.agent.usage is None or rec.agent.usage.total_tokens == 0, (cli, rec.agent.usage)
    assert rec.validity.reached_model_by == "gateway", (cli, rec.validity)
    gw = rec.agent.gateway_usage
    assert gw.responses_with_usage >= 1 and gw.total_tokens >= 135, (cli, gw)
    return rec


@pytest.mark.docker
def test_second_turn_hangs_scored_by_gateway(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(SOLVE, hang_on=("final",))):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=AGENT_TIMEOUT), harnesses=CLIS,
                         model="mock/mock-model", concurrency=2)
    for cli in CLIS:
        _assert_scored_by_gateway(result, cli)
    report = (tmp_path / "jobs" / "job" / "report.md").read_text()
    assert "gateway" in report and "reached the model" in report


@pytest.mark.docker
def test_tool_call_blocking_past_deadline_scored_by_gateway(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(SOLVE + "; sleep 600")):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=AGENT_TIMEOUT), harnesses=CLIS,
                         model="mock/mock-model", concurrency=2)
    for cli in CLIS:
        rec = record_of(result, "make-done", cli)
        if cli == "codex" and rec.validity.reached_model_by == "cli_log":
            # codex's shell tool hands a still-running command back to the model after ~10 s, so
            # its turn may complete (and log usage) before the deadline: then its own log decides
            assert rec.agent.usage.total_tokens > 0 and rec.validity.status == "scored", rec.validity
            continue
        _assert_scored_by_gateway(result, cli)
