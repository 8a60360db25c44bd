"""An agent that stops its own container late, after the engine's 256-event memory has moved on,
is still scored 0 (``broke-container``), never an environment failure: tbflow keeps its own record
of its containers' events (tasks_lib/container/engine_events.py) instead of asking the engine
afterwards."""

from __future__ import annotations

import threading
import time

import pytest

from task_factory import make_task, record_of
from tbflow_process import trial_containers
from tasks_lib.container.docker_client import get_client

pytestmark = pytest.mark.docker


def test_pid_1_killed_after_300_engine_events_is_scored_zero(run_job, tmp_path):
    make_task(tmp_path / "ds", "late-kill", solve="until [ -e /app/go ]; do sleep 0.05; done\nkill 1\nsleep 30\n",
              agent_timeout=240)
    done = threading.Event()

    def flood_then_go():
        while not done.is_set():
            found = trial_containers(get_client(), tmp_path, "late-kill.oracle.1")
            if found and found[0].status == "running":
                for _ in range(100):  # three engine events each (exec_create, exec_start, exec_die)
                    found[0].exec_run(["true"])
                found[0].exec_run(["touch", "/app/go"])
                return
            time.sleep(0.2)

    helper = threading.Thread(target=flood_then_go, daemon=True)
    helper.start()
    try:
        rec = record_of(run_job(tmp_path / "ds", env_retries=0), "late-kill")
    finally:
        done.set()
        helper.join(10)
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    assert "stopped from inside" in rec.validity.reason, rec.validity
