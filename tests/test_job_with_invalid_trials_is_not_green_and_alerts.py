"""Issue 19: a job with invalid trials was a green ``Completed`` run like an all-scored one, its
invalid trials green ``Completed`` tasks, and nothing at job level could be alerted on. A real
server (its automation services on), the shipped alert recipe set up by its own script for a
webhook on loopback, and two CLI runs against that server: an all-scored job, then a job with an
invalid trial run with ``--fail-on-invalid``. Only the second calls the webhook; its run is a red
``Failed`` named ``Not all scored`` and the CLI exits 1 with the gate's message."""

import json
import subprocess
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from prefect_stack import ROOT, Api, start_server, stop_session
from task_factory import make_task

VENV = ROOT / ".venv" / "bin"


class Hook:
    """A webhook on 127.0.0.1 that keeps every body it is sent."""

    def __init__(self) -> None:
        self.bodies: list[bytes] = []
        self.got = threading.Condition()
        hook = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 - http.server's name
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                with hook.got:
                    hook.bodies.append(body)
                    hook.got.notify_all()
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/alert"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def wait_for(self, n: int, timeout: float) -> list[bytes]:
        with self.got:
            self.got.wait_for(lambda: len(self.bodies) >= n, timeout)
            return list(self.bodies)


def _events(api: Api, name: str) -> list[dict]:
    return api.post("/events/filter", {"filter": {"event": {"name": [name]}}, "limit": 50})["events"]


@pytest.mark.docker
def test_invalid_trial_fails_the_gated_run_and_calls_the_webhook_all_scored_does_not(docker_ready, tmp_path):
    env, server = start_server(tmp_path)
    hook = Hook()
    try:
        setup = subprocess.run([str(ROOT / "deployments" / "alert-webhook.sh"), hook.url], env=env,
                               capture_output=True, text=True, timeout=120)
        assert setup.returncode == 0, setup.stdout + setup.stderr
        api = Api(env["PREFECT_API_URL"])

        ds = tmp_path / "ds"
        make_task(ds, "good")
        make_task(ds, "noreward", test_sh="#!/bin/bash\necho 'no reward written'\n")
        jobs = tmp_path / "jobs"
        tbflow = [str(VENV / "tbflow"), "run", str(ds), "--jobs-dir", str(jobs)]
        clean = subprocess.run(tbflow + ["--include", "good", "--job-name", "all-good", "--fail-on-invalid"],
                               env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert clean.returncode == 0, clean.stdout + clean.stderr
        gated = subprocess.run(tbflow + ["--job-name", "half-bad", "--fail-on-invalid"], env=env, cwd=tmp_path,
                               capture_output=True, text=True, timeout=600)
        assert gated.returncode == 1, gated.stdout + gated.stderr
        assert ("tbflow: 2 trials: 1 scored, 1 invalid; 1 invalid trial of 2 (50.0%) exceeds --fail-on-invalid "
                "(any invalid trial fails)") in gated.stderr, gated.stderr
        assert (jobs / "half-bad" / "trials" / "noreward.oracle.1" / "trial.json").is_file()  # recorded all the same
        # the terminal stays the progress lines': no engine ERROR line for the invalid trial's Failed state
        assert "| ERROR" not in gated.stderr and "| WARNING" not in gated.stderr, gated.stderr

        bodies = hook.wait_for(1, 120)
        assert len(bodies) == 1, bodies
        alert = json.loads(bodies[0])
        assert (alert["job"], alert["invalid"], alert["unrecorded"]) == ("half-bad", 1, 0), alert
        assert alert["text"] == "tbflow job half-bad: 2 trials: 1 scored, 1 invalid", alert
        assert alert["location"].endswith(str(jobs / "half-bad")), alert

        runs = {r["parameters"].get("job_name"): r for r in api.flow_runs()}
        good_state, bad_state = runs["all-good"]["state"], runs["half-bad"]["state"]
        assert (good_state["type"], good_state["name"], good_state["message"]) == (
            "COMPLETED", "Completed", "1 of 1 trials scored"), good_state
        assert (bad_state["type"], bad_state["name"]) == ("FAILED", "Not all scored"), bad_state
        trials = {t["name"]: t["state"] for t in api.task_runs(runs["half-bad"]["id"])}
        assert (trials["noreward.oracle.1"]["type"], trials["noreward.oracle.1"]["name"]) == ("FAILED", "Invalid")
        assert trials["good.oracle.1"]["type"] == "COMPLETED"
        # the all-scored job announced itself too, and that event fired nothing
        deadline = time.monotonic() + 60
        while not _events(api, "tbflow.job.all-scored") and time.monotonic() < deadline:
            time.sleep(0.5)
        (ok,) = _events(api, "tbflow.job.all-scored")
        assert ok["resource"]["prefect.resource.name"] == "all-good"
        assert len(hook.bodies) == 1
    finally:
        hook.server.shutdown()
        stop_session(server)
