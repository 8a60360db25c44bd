"""A user's own agent as a declarative harness file runs through ``tbflow run --harness
./agents/tiny-agent.toml`` like a built-in: the example (examples/declared-harness: a bash script
in a local directory, pinned by its tree sha256) reaches the mock model through the gateway from
a network-off container, its usage is read from its log by the file's field mapping, and its
"incomplete" exit code 3 (declared in ``[exit_codes]``) stays scoreable. The job identity keys the
file by its name: a resume from another directory with the same file keeps every record, and a
resume after the file changed is refused naming it."""

import os
import shutil
import subprocess

import pytest

from mock_model import USAGE, MockModel
from task_factory import make_task
from tasks_lib.store.job_store import JobStore
from tbflow_process import ROOT, TBFLOW

pytestmark = pytest.mark.docker
EXAMPLE = ROOT / "examples" / "declared-harness"


def _tbflow(args, cwd, env):
    return subprocess.run([*TBFLOW, *args], cwd=cwd, capture_output=True, text=True, env=env, timeout=600)


def test_user_toml_agent_scores_with_its_usage_and_resumes_only_unchanged(docker_ready, tmp_path):
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    for d in (here, elsewhere):
        shutil.copytree(EXAMPLE, d / "agents")
    ds = tmp_path / "ds"
    make_task(ds, "make-done", check="[ \"$(cat /app/done.txt)\" = solved ]", agent_timeout=120)
    jobs = tmp_path / "jobs"
    with MockModel() as mock:
        env = dict(os.environ, TBFLOW_OPENAI_BASE_URL=f"{mock.base_url}/v1", OPENAI_API_KEY="sk-real-tiny-do-not-leak",
                   TBFLOW_HISTORY=str(tmp_path / "history.sqlite"))
        res = _tbflow(["run", str(ds), "--harness", "./agents/tiny-agent.toml", "--model", "mock/mock-model",
                       "--jobs-dir", str(jobs), "--job-name", "j"], here, env)
        assert res.returncode == 0, res.stdout + res.stderr
        assert [r["reply"] for r in mock.requests] == ["side"]
        assert mock.requests[0]["headers"]["authorization"] == "Bearer sk-real-tiny-do-not-leak"

    rec = JobStore(jobs / "j").read_trial("make-done.tiny-agent.1")
    assert rec is not None
    assert (rec.validity.status, rec.validity.reward, rec.validity.reached_model_by) == ("scored", 1.0, "cli_log"), rec
    assert rec.agent.exit_code == 3 and rec.agent.exit_meaning.startswith("incomplete"), rec.agent
    assert (rec.agent.usage.input_tokens, rec.agent.usage.output_tokens) == USAGE["side"]
    assert rec.agent.gateway_usage.total_tokens == sum(USAGE["side"]) and rec.agent.usage_disagreement is None
    assert (rec.harness_source.origin, rec.harness_source.target) == ("declared", "tiny-agent.toml")
    assert rec.spec.harness_ref == "./agents/tiny-agent.toml"
    assert rec.harness_provenance[0]["source"] == "local-dir"

    again = _tbflow(["resume", str(jobs / "j")], elsewhere, env)  # same file, another directory
    assert again.returncode == 0, again.stdout + again.stderr
    assert JobStore(jobs / "j").read_trial("make-done.tiny-agent.1") == rec

    toml = elsewhere / "agents" / "tiny-agent.toml"
    toml.write_text(toml.read_text().replace('3 = "incomplete', '3 = "stopped early'))
    changed = _tbflow(["resume", str(jobs / "j")], elsewhere, env)
    assert changed.returncode == 2, changed.stdout + changed.stderr
    assert "harness tiny-agent adapter changed: tiny-agent.toml" in changed.stderr, changed.stderr
