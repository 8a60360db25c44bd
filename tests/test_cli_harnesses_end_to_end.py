"""The real agent CLIs, in real task containers with networking off, through tbflow's model
gateway, against the scripted mock model: a solving episode is scored with tokens; a 401 is
invalid: harness (pi included, although it exits 0); a hanging model ends at the agent timeout;
and the real key never lands anywhere in the job directory. The solving episode and the key
check read the shared happy job (tests/shared_cli_jobs.py)."""

import json

import pytest

from mock_model import MockModel
from shared_cli_jobs import (DUMP, HAPPY_CLIS, HAPPY_COMMAND, HAPPY_HARNESSES, REAL_ANTHROPIC_KEY, REAL_GEMINI_KEY,
                             REAL_KEYS, REAL_OPENAI_KEY)
from task_factory import make_task, record_of

CLIS = ["codex", "opencode", "pi", "claude-code"]  # the declared CLIs' 401 and hang: test_declared_clis_end_to_end.py


@pytest.fixture
def model(monkeypatch):
    """Start the mock model and point the gateway's upstream at it (``prefix`` injects faults)."""
    started = []

    def _start(prefix: str = "", command: str = "echo solved > /app/done.txt"):
        m = MockModel(command).start()
        started.append(m)
        monkeypatch.setenv("TBFLOW_OPENAI_BASE_URL", f"{m.base_url}{prefix}/v1")
        monkeypatch.setenv("OPENAI_API_KEY", REAL_OPENAI_KEY)
        monkeypatch.setenv("TBFLOW_ANTHROPIC_BASE_URL", f"{m.base_url}{prefix}")
        monkeypatch.setenv("ANTHROPIC_API_KEY", REAL_ANTHROPIC_KEY)
        monkeypatch.setenv("TBFLOW_GEMINI_BASE_URL", f"{m.base_url}{prefix}")
        monkeypatch.setenv("GEMINI_API_KEY", REAL_GEMINI_KEY)
        return m

    yield _start
    for m in started:
        m.stop()


def _solvable(tmp_path, **kw):
    kw.setdefault("agent_timeout", 240)  # opencode alone took 60+ s to start at load 12 on 2 cores
    ds = tmp_path / "ds"
    make_task(ds, "make-done", check="[ \"$(cat /app/done.txt)\" = solved ]",
              instruction="Create /app/done.txt containing the word solved.\n", **kw)
    return ds


def test_every_cli_solves_through_the_gateway(happy_cli_job):
    for cli in HAPPY_CLIS:
        rec = happy_cli_job.record(cli)
        assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (cli, rec.validity, rec.agent)
        assert rec.agent.usage.total_tokens > 0, cli
        assert rec.agent.gateway_usage.requests >= 2 and rec.agent.gateway_usage.total_tokens > 0, cli
        assert rec.harness_provenance, cli
    job = json.loads((happy_cli_job.job_dir / "job.json").read_text())
    assert sorted(job["harness_provenance"]) == sorted(HAPPY_CLIS)
    for cli, items in job["harness_provenance"].items():
        assert items and all(i["integrity"].startswith(("sha512-", "sha256")) for i in items), (cli, items)
    seen = {"".join(r.get("headers", {}).get(h, "") for h in ("authorization", "x-api-key", "x-goog-api-key"))
            for r in happy_cli_job.requests}
    assert all(any(key in s for key in REAL_KEYS) for s in seen), seen


def test_401_is_invalid_harness_for_every_cli(run_job, tmp_path, model):
    model(prefix="/status/401")
    result = run_job(_solvable(tmp_path), harnesses=CLIS, model="mock/mock-model", concurrency=2)
    for cli in CLIS:
        rec = record_of(result, "make-done", cli)
        assert (rec.validity.status, rec.validity.kind) == ("invalid", "harness"), (cli, rec.validity)
        assert "never reached the model" in rec.validity.reason
    pi = record_of(result, "make-done", "pi")
    assert pi.agent.exit_code == 0  # pi exits 0 after a 401 in JSON mode: judged by usage


def test_hanging_model_ends_at_agent_timeout(run_job, tmp_path, model):
    model(prefix="/hang")
    result = run_job(_solvable(tmp_path, agent_timeout=8), harnesses=CLIS, model="mock/mock-model", concurrency=2)
    for cli in CLIS:
        rec = record_of(result, "make-done", cli)
        assert rec.agent.timed_out and rec.agent.duration_sec < 8 + 15, cli
        assert rec.validity.status == "invalid" and rec.validity.kind == "harness", (cli, rec.validity)
        assert rec.kill.left_running == [] or all("tbflow" not in p.command for p in rec.kill.left_running)


def test_real_key_never_lands_in_the_job_directory(happy_cli_job):
    # the agent's one shell command dumps its environment and every readable file it can find
    assert DUMP in HAPPY_COMMAND
    job_dir = happy_cli_job.job_dir
    hits = []
    for f in job_dir.rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            if any(key.encode() in data for key in REAL_KEYS):
                hits.append(str(f.relative_to(job_dir)))
    assert hits == []
    dumped = [f for f in job_dir.rglob("env.txt")]
    assert len(dumped) == len(HAPPY_HARNESSES), "the agent's env dump should have been captured in agent/"
