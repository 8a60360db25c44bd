"""``tbflow run`` with the default, relative ``--jobs-dir`` (``jobs``) and a model harness: the
gateway socket's bind mount got a relative host path, which Docker refuses, so every model trial
was invalid: environment. Run the way users run it: the real CLI in a fresh process, cwd a temp
dir, no --jobs-dir, no --job-name."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from cli_model import SOLVE, pointed_at_mock, solvable_task
from mock_model import MockModel

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.docker
def test_model_harness_runs_with_default_relative_jobs_dir(tmp_path, monkeypatch, docker_ready):
    work = tmp_path / "work"
    work.mkdir()
    solvable_task(work / "ds")
    with pointed_at_mock(monkeypatch, MockModel(SOLVE)):
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        proc = subprocess.run([sys.executable, "-m", "flows.cli.main", "run", "ds", "--harness", "codex",
                               "--model", "mock/mock-model"], cwd=work, env=env, capture_output=True, text=True,
                              timeout=600, stdin=subprocess.DEVNULL)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    records = list((work / "jobs").glob("*/trials/make-done.codex.1/trial.json"))
    assert len(records) == 1, list((work / "jobs").rglob("*"))
    rec = json.loads(records[0].read_text())
    assert rec["validity"]["status"] == "scored" and rec["validity"]["reward"] == 1.0, rec["validity"]
    assert rec["agent"]["gateway_usage"]["output_tokens"] > 0
