"""tbflow-agent, the built-in host-side agent, in real task containers with networking off, its
loop on the host, its model through tbflow's gateway, against the scripted mock model: it solves
a task (scored 1, usage from its own event log and the gateway); a 401 is invalid: harness with
its error line, a 429 after two retries; a cut-off in a long tool call is scored (it reached the model), the command's
process group is gone before the verifier and the event log written before the cut-off is kept;
its commands see the same HOME, PATH, WORKDIR and ENV as the oracle's solution, and the real key
never lands in the job directory."""

import json
from pathlib import Path

from cli_model import pointed_at_mock, solvable_task
from mock_model import MockModel
from shared_cli_jobs import DUMP, HAPPY_COMMAND, IMAGE_PATH, happy_task
from task_factory import make_task, record_of

REAL_KEY = "sk-real-openai-host-agent-do-not-leak"


def result_dir(result) -> Path:
    return Path(result.job_dir)


def _events(result, rec) -> list[dict]:
    path = result_dir(result) / "trials" / rec.trial_id / "host-agent" / "events.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_tbflow_agent_solves_through_the_gateway_scored_with_usage_from_its_log(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel("echo solved > /app/done.txt")) as mock:
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=120), harnesses=["tbflow-agent"],
                         model="mock/mock-model")
    rec = record_of(result, "make-done", "tbflow-agent")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (rec.validity, rec.agent)
    assert rec.validity.reached_model_by == "cli_log"
    assert (rec.agent.usage.input_tokens, rec.agent.usage.output_tokens) == (120 + 160, 15 + 5)
    assert rec.agent.gateway_usage.requests == 2 and rec.agent.gateway_usage.total_tokens == 300
    assert rec.agent.usage_disagreement is None
    assert (rec.agent.exit_code, rec.agent.timed_out, rec.agent.stdout_log) == (0, False, "host-agent/events.jsonl")
    kinds = [e["type"] for e in _events(result, rec)]
    assert kinds == ["start", "model", "tool-start", "tool", "model", "end"], kinds
    sent = [r for r in mock.requests if r["path"].endswith("/chat/completions")]
    assert [t["function"]["name"] for t in sent[0]["body"]["tools"]] == ["bash", "task_complete"]
    assert "[time left: " in sent[1]["body"]["messages"][-1]["content"]
    # the command's output is kept with the agent's logs
    out = result_dir(result) / "trials" / rec.trial_id / "agent" / "exec" / "00001.txt"
    assert out.is_file()


def test_tbflow_agent_401_is_invalid_harness_with_the_error_line(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(), prefix="/status/401"):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=120), harnesses=["tbflow-agent"],
                         model="mock/mock-model")
    rec = record_of(result, "make-done", "tbflow-agent")
    assert (rec.validity.status, rec.validity.kind) == ("invalid", "harness"), rec.validity
    assert "never reached the model" in rec.validity.reason
    assert "HTTP 401" in rec.validity.reason and "Incorrect API key" in rec.validity.reason, rec.validity.reason
    assert "sk-test-openai" not in rec.validity.reason
    assert rec.validity.evidence == "host-agent/events.jsonl"
    assert rec.agent.gateway_usage.requests == 1  # a 401 is not retried


VERIFY_NO_SLEEPER = r"""#!/bin/sh
for d in /proc/[0-9]*; do
  c=$(tr '\000' ' ' < $d/cmdline 2>/dev/null)
  case "$c" in "sleep 1000"*) echo 0 > /logs/verifier/reward.txt; exit 0 ;; esac
done
echo 1 > /logs/verifier/reward.txt
"""


def test_cut_off_in_a_long_tool_call_is_scored_not_invalid(run_job, tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    make_task(ds, "sleeper", test_sh=VERIFY_NO_SLEEPER, agent_timeout=6)
    with pointed_at_mock(monkeypatch, MockModel("sleep 1000")):
        result = run_job(ds, harnesses=["tbflow-agent"], model="mock/mock-model")
    rec = record_of(result, "sleeper", "tbflow-agent")
    assert rec.agent.timed_out and rec.agent.exit_code is None and not rec.agent.abandoned, rec.agent
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert rec.validity.reached_model_by == "cli_log"
    assert rec.kill.cut_off
    assert any("sleep 1000" in p.command for p in rec.kill.killed), rec.kill
    assert not any("sleep 1000" in p.command for p in rec.kill.left_running)
    events = _events(result, rec)
    assert [e["type"] for e in events][:3] == ["start", "model", "tool-start"], events
    assert events[-1] == {**events[-1], "type": "end", "reason": "deadline"}


def test_host_agent_commands_see_the_same_environment_as_the_oracle(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(HAPPY_COMMAND)):
        monkeypatch.setenv("OPENAI_API_KEY", REAL_KEY)
        result = run_job(happy_task(tmp_path / "ds"), harnesses=["oracle", "tbflow-agent"], model="mock/mock-model",
                         concurrency=2)
    seen = {}
    for h in ("oracle", "tbflow-agent"):
        rec = record_of(result, "probe", h)
        assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (h, rec.validity)
        seen[h] = (result_dir(result) / "trials" / rec.trial_id / "agent" / "probe.txt").read_text().splitlines()
    assert seen["oracle"][1] == "/app" and f"PATH={IMAGE_PATH}" in seen["oracle"]
    assert "HOME=/root" in seen["oracle"] and "TASK_MARKER=from-task-toml" in seen["oracle"]
    assert seen["tbflow-agent"] == seen["oracle"]
    assert DUMP in HAPPY_COMMAND  # the agent's command dumped every environment and file it could read
    hits = [str(f) for f in result_dir(result).rglob("*") if f.is_file() and REAL_KEY.encode() in f.read_bytes()]
    assert hits == []


def test_tbflow_agent_retries_a_429_twice_then_is_invalid_harness(run_job, tmp_path, monkeypatch):
    with pointed_at_mock(monkeypatch, MockModel(), prefix="/status/429"):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=120), harnesses=["tbflow-agent"],
                         model="mock/mock-model")
    rec = record_of(result, "make-done", "tbflow-agent")
    assert (rec.validity.status, rec.validity.kind) == ("invalid", "harness"), rec.validity
    assert "HTTP 429" in rec.validity.reason
    assert rec.agent.gateway_usage.requests == 3 and rec.agent.gateway_usage.errors == {429: 3}
    assert [e["type"] for e in _events(result, rec)] == ["start", "retry", "retry", "error", "end"]
