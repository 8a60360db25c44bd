"""Ctrl-C in a real terminal (tmux: an interactive shell, the key sent with send-keys) reaches the
whole foreground process group. It used to kill the embedded Prefect server before tbflow had
stopped, and tbflow then printed pages of ConnectError tracebacks. Now: one summary, exit 130,
no traceback, no container, no server left."""

import shlex
import shutil
import subprocess
import uuid

import pytest

from task_factory import make_task
from tbflow_process import (ROOT, TBFLOW, alive, cmdline, descendants, job_containers, running_job_containers,
                            server_processes, wait_until)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("per_command_server")]


#: a tmux server of our own (its own socket), so no one else's tmux sessions are touched
SOCKET = f"tbflow-test-{uuid.uuid4().hex[:8]}"


def _tmux(*args: str) -> str:
    return subprocess.run(["tmux", "-L", SOCKET, *args], check=True, capture_output=True, text=True).stdout


def _tbflow_pid(shell: int) -> int | None:
    """The tbflow process the terminal's shell started (its child running ``flows.cli.main``)."""
    found = [p for p in descendants(shell) if "flows.cli.main" in cmdline(p)]
    return min(found) if found else None


@pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux for a real terminal")
def test_ctrl_c_in_terminal_exits_130_without_traceback(docker_ready, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "slow", solve="sleep 120\n")
    jobs = tmp_path / "jobs"
    rc_file = tmp_path / "rc"
    session = "tbflow"
    command = " ".join(shlex.quote(a) for a in [*TBFLOW, "run", str(ds), "--jobs-dir", str(jobs),
                                                  "--job-name", "j"])
    _tmux("new-session", "-d", "-s", session, "-x", "200", "-y", "60", "-c", str(ROOT),
          "bash --norc --noprofile -i")
    try:
        _tmux("send-keys", "-t", session, f"{command}; echo $? > {rc_file}", "Enter")
        shell = int(_tmux("display-message", "-p", "-t", session, "#{pane_pid}"))
        wait_until(lambda: _tbflow_pid(shell), 30, "tbflow to start in the terminal")
        pid = _tbflow_pid(shell)
        wait_until(lambda: running_job_containers(docker_ready, jobs / "j"), 300, "the trial container")
        servers = server_processes(pid)
        assert servers
        _tmux("send-keys", "-t", session, "C-c")
        wait_until(lambda: rc_file.exists() and rc_file.read_text().strip(), 120, "tbflow to exit")
        screen = _tmux("capture-pane", "-p", "-J", "-S", "-2000", "-t", session)
    finally:
        subprocess.run(["tmux", "-L", SOCKET, "kill-server"], capture_output=True)
    assert rc_file.read_text().strip() == "130", screen
    assert "Traceback" not in screen and "ConnectError" not in screen, screen
    assert "stopped by SIGINT: 0 of 1 trials recorded" in screen, screen
    assert "resume with: tbflow resume" in screen, screen
    assert job_containers(docker_ready, jobs / "j") == []
    wait_until(lambda: not any(alive(p) for p in servers), 15, "the server to exit")
