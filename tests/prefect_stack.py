"""A real Prefect server (and the processes around it) for deployment tests, on 127.0.0.1.

Everything is started in one new session, so a test ends exactly what it started, by that
process group, and nothing else on this shared machine.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import httpx
from tenacity import retry, retry_if_result, stop_after_attempt, wait_exponential

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def clean_env(prefect_home: Path, **extra: str) -> dict[str, str]:
    """The environment of a new user: no PREFECT_* setting of the test session, a fresh home.

    One setting a new user would not have: the server's scheduler is off. deployments/prefect.yaml
    ships active schedules (the nightly recipe), and a scheduler would create their Scheduled runs
    within a minute of ``prefect deploy``: extra flow runs in every count, and a run a worker
    could start if a test crossed a scheduled minute. Tests create the runs they mean to.
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_") and k != "VIRTUAL_ENV"}
    env["PATH"] = ":".join(p for p in env.get("PATH", "").split(":") if not p.startswith(str(ROOT / ".venv")))
    env["PREFECT_HOME"] = str(prefect_home)
    env["PREFECT_SERVER_SERVICES_SCHEDULER_ENABLED"] = "false"
    env.update(extra)
    return env


def start_session(cmd: list[str], env: dict, cwd: Path, log: Path) -> subprocess.Popen:
    fh = open(log, "wb")  # noqa: SIM115 - lives as long as the process
    return subprocess.Popen(cmd, env=env, cwd=cwd, stdout=fh, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                            start_new_session=True)


def stop_session(proc: subprocess.Popen, grace: float = 15) -> None:
    """SIGTERM, then SIGKILL, to the process group this test started (and only to it)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        try:
            os.killpg(proc.pid, sig)
        except ProcessLookupError:
            return
        deadline = time.time() + grace
        while time.time() < deadline:
            try:
                os.killpg(proc.pid, 0)
            except ProcessLookupError:
                proc.poll()
                return
            proc.poll()
            time.sleep(0.3)


def start_server(tmp_path: Path) -> tuple[dict[str, str], subprocess.Popen]:
    """A Prefect server on a free loopback port, in a session of its own (``stop_session`` ends
    it), once it answers; and a new user's environment pointed at it (``PREFECT_API_URL``, the
    venv's ``bin`` first on ``PATH``), for the CLI commands a test then runs."""
    venv = ROOT / ".venv" / "bin"
    port = free_port()
    env = clean_env(tmp_path / "prefect-home", PREFECT_API_URL=f"http://127.0.0.1:{port}/api",
                    PREFECT_SERVER_ANALYTICS_ENABLED="false", PATH=f"{venv}:{os.environ['PATH']}")
    server = start_session([str(venv / "prefect"), "server", "start", "--host", "127.0.0.1", "--port", str(port)],
                           env, tmp_path, tmp_path / "server.log")
    try:
        subprocess.run(["prefect", "server", "status", "--wait", "--timeout", "120"], env=env, check=True,
                       capture_output=True, timeout=180)
    except BaseException:
        stop_session(server)
        raise
    return env, server


#: what a Prefect server answers when it is busy (a locked SQLite database is a 503): Prefect's own
#: client retries these (PREFECT_CLIENT_MAX_RETRIES), so the tests' plain HTTP calls do too
BUSY = (429, 503)


@retry(retry=retry_if_result(lambda r: r.status_code in BUSY), wait=wait_exponential(multiplier=0.5, max=5),
       stop=stop_after_attempt(10), retry_error_callback=lambda state: state.outcome.result())
def send(method: str, url: str, **kw) -> httpx.Response:
    """One HTTP request to a Prefect server, retried while the server says it is busy."""
    return httpx.request(method, url, timeout=kw.pop("timeout", 30), **kw)


class Api:
    """The few REST calls the tests read the server with (plain HTTP: no client settings involved)."""

    def __init__(self, url: str) -> None:
        self.url = url.rstrip("/")

    def post(self, path: str, body: dict | None = None):
        r = send("POST", self.url + path, json=body or {})
        r.raise_for_status()
        return r.json()

    def flow_runs(self, **flt) -> list[dict]:
        return self.post("/flow_runs/filter", flt)

    def task_runs(self, flow_run_id: str) -> list[dict]:
        return self.post("/task_runs/filter", {"flow_runs": {"id": {"any_": [flow_run_id]}}, "limit": 200})

    def artifacts(self, flow_run_id: str) -> list[dict]:
        return self.post("/artifacts/filter", {"artifacts": {"flow_run_id": {"any_": [flow_run_id]}}})

    def logs(self, flow_run_id: str) -> list[dict]:
        return self.post("/logs/filter", {"logs": {"flow_run_id": {"any_": [flow_run_id]}}, "limit": 200})
