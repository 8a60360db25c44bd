"""``tbflow server start`` is the one way to reuse a local Prefect server across commands
(docs/local-server.md): it must leave a server answering on the loopback port it prints, with
tbflow's lean services, noted as tbflow's; ``tbflow server stop`` must stop it and drop the note.
A port already taken is refused in one line naming ``--port``."""

import os
import socket
import subprocess
import urllib.request

from tbflow_process import ROOT, TBFLOW, wait_until


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{url}/health", timeout=2) as resp:
            return resp.status == 200
    except OSError:
        return False


def test_server_start_then_stop(tmp_path):
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env["PREFECT_HOME"] = str(home)
    port = _free_port()
    cli = [*TBFLOW, "server"]
    started = subprocess.run([*cli, "start", "--port", str(port)], cwd=ROOT, env=env, capture_output=True,
                             text=True, timeout=240)
    url = f"http://127.0.0.1:{port}/api"
    try:
        assert started.returncode == 0, started.stdout + started.stderr
        assert started.stdout.strip() == f"export PREFECT_API_URL={url}", started.stdout
        assert _answers(url)
        assert (home / "tbflow-server.url").read_text().strip() == url
        [pid] = (home / "server.pid").read_text().split()
        with open(f"/proc/{pid}/environ", "rb") as fh:
            assert b"PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED=false" in fh.read().split(b"\0")
        taken = subprocess.run([*cli, "start", "--port", str(port)], cwd=ROOT, env=env, capture_output=True,
                               text=True, timeout=240)
        assert taken.returncode == 1 and taken.stderr.startswith("tbflow: error: --port:"), taken.stderr
        assert "Traceback" not in taken.stderr
    finally:
        stopped = subprocess.run([*cli, "stop"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    wait_until(lambda: not _answers(url), 60, "the server to stop")
    assert not (home / "tbflow-server.url").exists()
