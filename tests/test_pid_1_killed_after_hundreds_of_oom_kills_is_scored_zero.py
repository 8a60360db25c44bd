"""An agent whose children are OOM-killed by the hundred and which then kills its container's PID 1
is scored 0 (``broke-container``), never an environment failure: each OOM kill is one ``oom``
engine event, and when those shared one bound with the container's lifecycle events they pushed
its ``start`` out of tbflow's record (tasks_lib/container/engine_events.py), so the stop could not
be put on the agent and the trial was run three times."""

from __future__ import annotations

import pytest

from task_factory import make_task, record_of

pytestmark = pytest.mark.docker

#: 300 children of 128 MB each under a 96 MB limit: each is OOM-killed (one ``oom`` event each)
SOLVE = """python3 - <<'PY'
import os
killed = 0
for _ in range(300):
    pid = os.fork()
    if pid == 0:
        b = bytearray(128 * 2**20)
        os._exit(0)
    killed += os.WIFSIGNALED(os.waitpid(pid, 0)[1])
print("children OOM-killed:", killed, flush=True)
PY
kill 1
sleep 30
"""


def test_pid_1_killed_after_300_oom_kills_is_scored_zero(run_job, tmp_path):
    make_task(tmp_path / "ds", "oom-flood", solve=SOLVE, extra_toml="memory_mb = 96\n", agent_timeout=240)
    rec = record_of(run_job(tmp_path / "ds", env_retries=0), "oom-flood")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    (flag,) = [f for f in rec.flags if f.kind == "broke-container"]
    # OOMKilled is set by the children's kills; the main process was stopped from inside, and the
    # reason says so (it used to read "OOM-killed at the task's memory limit")
    assert "stopped from inside" in flag.message and "OOM-killed before" in flag.message, flag
    state = (tmp_path / "jobs" / "job" / "trials" / rec.trial_id / flag.evidence).read_text()
    lines = state.splitlines()
    assert any(line.startswith("  start ") for line in lines), state
    assert sum(line.startswith("  oom ") for line in lines) >= 100, state
    assert any(line.startswith("  die ") for line in lines), state
