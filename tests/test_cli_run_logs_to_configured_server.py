"""Issue 10: a `tbflow run` with PREFECT_API_URL set showed "This run didn't generate logs" in
the UI (the CLI turned every run logger down to WARNING). With a configured server the run's
INFO lines reach the server; the terminal still shows only the progress bar and warnings."""

import socket
import subprocess

import pytest

from prefect_stack import ROOT, Api, start_server, stop_session

VENV = ROOT / ".venv" / "bin"


@pytest.mark.docker
def test_cli_run_against_a_server_sends_its_logs(docker_ready, tmp_path):
    env, server = start_server(tmp_path)
    try:
        jobs = tmp_path / "jobs"
        res = subprocess.run([str(VENV / "tbflow"), "run", str(ROOT / "examples" / "tasks"), "--include", "word-count",
                              "--jobs-dir", str(jobs), "--job-name", "logged"], env=env, cwd=tmp_path,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == 0, res.stdout + res.stderr
        assert "| INFO" not in res.stderr, res.stderr  # the terminal stays the progress bar's

        api = Api(env["PREFECT_API_URL"])
        (run,) = [r for r in api.flow_runs() if r["parameters"].get("job_name") == "logged"]
        messages = [x["message"] for x in api.logs(run["id"])]
        assert any(m == f"job {socket.gethostname()}:{jobs / 'logged'}: 1 trials (0 already recorded)"
                   for m in messages), messages
        assert any(m.startswith("[1/1] word-count oracle#1: scored 1") for m in messages), messages
    finally:
        stop_session(server)
