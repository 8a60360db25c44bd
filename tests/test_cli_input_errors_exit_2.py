"""Bad CLI input exits 2 with a message naming the flag or path, and writes nothing."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from flows.cli.main import app

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "tasks"


@pytest.mark.parametrize("args, words", [
    (["--concurrency", "0"], "--concurrency"),
    (["--concurrency", "two"], "--concurrency"),
    (["--attempts", "0"], "--attempts"),
    (["--attempts", "-3"], "--attempts"),
    (["--n-tasks", "0"], "--n-tasks"),
    (["--n-tasks", "1.5"], "--n-tasks"),
    (["--harness", "gpt-agent"], "--harness"),
    (["--job-name", "../escape"], "--job-name"),
    (["--include", "no-such-task-*"], "--include"),
    (["--max-log-mb", "0"], "--max-log-mb"),
    (["--max-log-mb", "lots"], "--max-log-mb"),
])
def test_bad_flag_exits_2_and_names_it(tmp_path, args, words):
    jobs = tmp_path / "jobs"
    res = CliRunner().invoke(app, ["run", str(EXAMPLES), "--jobs-dir", str(jobs), *args])
    assert res.exit_code == 2, res.output
    assert words in res.output
    assert not jobs.exists()


def test_missing_dataset_and_empty_dir(tmp_path):
    jobs = tmp_path / "jobs"
    res = CliRunner().invoke(app, ["run", str(tmp_path / "nope"), "--jobs-dir", str(jobs)])
    assert res.exit_code == 2 and "does not exist" in res.output
    empty = tmp_path / "empty"
    empty.mkdir()
    res = CliRunner().invoke(app, ["run", str(empty), "--jobs-dir", str(jobs)])
    assert res.exit_code == 2 and "no tasks found" in res.output
    assert not jobs.exists()


def test_python_callers_get_the_same_checks():
    from pydantic import ValidationError

    from flows.job.job_config import JobConfig

    with pytest.raises(ValidationError, match="concurrency"):
        JobConfig(dataset="x", concurrency=0)
    with pytest.raises(ValidationError, match="harnesses\n  Value error, cannot use harness 'nope': tried built-ins"):
        JobConfig(dataset="x", harnesses=["nope"])


def test_docker_missing_gives_one_clear_line(tmp_path):
    env = dict(os.environ, DOCKER_HOST=f"unix://{tmp_path}/no-docker.sock")
    res = subprocess.run([sys.executable, "-m", "flows.cli.main", "run", str(EXAMPLES), "--jobs-dir", str(tmp_path / "jobs")],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert "cannot reach the Docker engine" in res.stderr
    assert "Traceback" not in res.stderr + res.stdout
    assert not (tmp_path / "jobs").exists()


def test_model_harness_needs_a_model_and_an_upstream_key(tmp_path, monkeypatch):
    jobs = tmp_path / "jobs"
    res = CliRunner().invoke(app, ["run", str(EXAMPLES), "--jobs-dir", str(jobs), "--harness", "codex"])
    assert res.exit_code == 2 and "--model" in res.output
    for var in ("ANTHROPIC_API_KEY", "TBFLOW_ANTHROPIC_BASE_URL"):
        monkeypatch.delenv(var, raising=False)
    res = CliRunner().invoke(app, ["run", str(EXAMPLES), "--jobs-dir", str(jobs), "--harness", "claude-code",
                                   "--model", "anthropic/claude-x"])
    assert res.exit_code == 2 and "ANTHROPIC_API_KEY" in res.output, res.output
    assert not jobs.exists()
