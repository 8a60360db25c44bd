"""Qwen Code and Gemini CLI, the two CLIs tbflow ships as declarative harness files
(harnesses/declared/*.toml), in real task containers with networking off, through the gateway
(Chat Completions for qwen, the Gemini API for gemini), against the scripted mock: a 401 is
invalid: harness with the CLI's own error line, and a CLI cut off at the agent timeout after it
reached the model is scored, with the gateway as the witness (both log usage only in their final
``result`` line). Their solving episode, the same-environment probe and the key check are in the
shared happy job (tests/shared_cli_jobs.py)."""

import pytest

from cli_model import DECLARED_CLIS, SOLVE, pointed_at_mock, solvable_task
from mock_model import MockModel
from task_factory import record_of

pytestmark = pytest.mark.docker

#: long enough for a slow CLI start on a loaded machine (qwen took 54 s on the host at load 8)
AGENT_TIMEOUT = 100


def test_401_is_invalid_harness_with_the_clis_own_error_line(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(SOLVE), prefix="/status/401") as mock:
        result = run_job(solvable_task(tmp_path / "ds"), harnesses=DECLARED_CLIS, model="mock/mock-model",
                         concurrency=2)
    for cli in DECLARED_CLIS:
        rec = record_of(result, "make-done", cli)
        assert (rec.validity.status, rec.validity.kind) == ("invalid", "harness"), (cli, rec.validity)
        assert "never reached the model" in rec.validity.reason and "401" in rec.validity.reason, rec.validity
        assert "Incorrect API key provided" in (rec.agent.error_line or ""), (cli, rec.agent)
        assert "sk-tbflow-" not in rec.validity.reason  # the echoed token is redacted
        assert rec.agent.gateway_usage.errors.get(401, 0) >= 1, (cli, rec.agent.gateway_usage)
    # each CLI gave up on the 401 at once: one request each, no retry loop
    assert len([r for r in mock.requests if r["reply"] == "status:401"]) == len(DECLARED_CLIS)


def test_cut_off_after_reaching_the_model_is_scored_by_the_gateway(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(SOLVE, hang_on=("final",))):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=AGENT_TIMEOUT), harnesses=DECLARED_CLIS,
                         model="mock/mock-model", concurrency=2)
    for cli in DECLARED_CLIS:
        rec = record_of(result, "make-done", cli)
        assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (cli, rec.validity, rec.agent)
        assert rec.agent.timed_out, (cli, rec.agent)
        assert rec.validity.reached_model_by == "gateway", (cli, rec.validity)
        gw = rec.agent.gateway_usage
        assert gw.responses_with_usage >= 1 and gw.total_tokens >= 135, (cli, gw)
        assert rec.agent.usage is None or rec.agent.usage.total_tokens == 0, (cli, rec.agent.usage)
