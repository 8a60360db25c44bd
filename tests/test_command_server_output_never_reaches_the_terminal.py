"""A command's own Prefect server writes to a file in PREFECT_HOME, never to tbflow's terminal.

Under load, Prefect's server services log errors while they shut down ("Error flushing events",
with a traceback); with the server's output inherited they landed on the user's screen after a
Ctrl-C (tests/test_ctrl_c_in_terminal_exits_130_without_traceback.py saw it at a load of 16).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROBE = """
import os, sys
from flows.local_server import command_server
server = command_server.start()
server.wait_ready()
pid = server.proc.pid
print(os.readlink(f"/proc/{pid}/fd/1"), os.readlink(f"/proc/{pid}/fd/2"), flush=True)
os.write(os.open(f"/proc/{pid}/fd/2", os.O_WRONLY), b"a line the server printed\\n")
server.stop()
"""


def test_command_server_output_goes_to_its_log_file_not_the_terminal(tmp_path):
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}
    env.update(PREFECT_HOME=str(home), PYTHONPATH=str(ROOT))
    run = subprocess.run([sys.executable, "-c", PROBE], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=180)
    assert run.returncode == 0, run.stderr
    log = home / "tbflow-server.log"
    assert run.stdout.split() == [str(log), str(log)], run.stdout
    assert "a line the server printed" in log.read_text()
    assert "a line the server printed" not in run.stderr + run.stdout
