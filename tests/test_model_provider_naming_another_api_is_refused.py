"""Issue 31: ``--model anthropic/...`` with a harness that speaks OpenAI's API sent the model to
the OpenAI endpoint: the gateway routes by the harness's wire API, and ``PROVIDER`` was only a
label. A prefix naming another API family is now refused before the job starts, naming the
harness, its API and the endpoint variable; a prefix naming no family stays a label.
"""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from flows.cli.main import app
from tasks_lib.gateway.provider_check import provider_mismatch

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"


def test_a_provider_naming_another_api_is_a_mismatch_naming_harness_api_and_endpoint():
    found = provider_mismatch("anthropic/claude-x", {"codex": "openai-responses", "claude-code": "anthropic-messages"})
    assert found is not None
    assert "codex speaks openai-responses (sent to TBFLOW_OPENAI_BASE_URL)" in found, found
    assert "claude-code" not in found
    assert provider_mismatch("google/gemini-x", {"gemini-cli": "gemini-generate-content"}) is None
    assert "pi speaks openai-chat" in provider_mismatch("gemini/x", {"pi": "openai-chat"})


def test_a_provider_naming_no_api_is_a_label_for_every_harness():
    wires = {"codex": "openai-responses", "claude-code": "anthropic-messages", "gemini-cli": "gemini-generate-content"}
    assert provider_mismatch("mock/mock-model", wires) is None
    assert provider_mismatch("openrouter/anthropic/claude-x", wires) is None


def test_run_refuses_anthropic_model_for_codex_before_anything_is_written(tmp_path, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    jobs = tmp_path / "jobs"
    res = CliRunner().invoke(app, ["run", str(EXAMPLES), "--jobs-dir", str(jobs), "--harness", "codex",
                                   "--model", "anthropic/claude-x"])
    assert res.exit_code == 2, res.output
    assert "tbflow: error: --model: 'anthropic/claude-x': provider 'anthropic' names the anthropic API" in res.output
    assert "codex speaks openai-responses" in res.output
    assert not jobs.exists()
