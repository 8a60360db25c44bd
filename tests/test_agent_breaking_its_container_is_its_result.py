"""An agent that breaks what its verifier needs gets its own result (scored 0, flagged
``broke-container``, with Docker's evidence), never an invalid trial; what breaks from outside
(a kill through the Docker API, an image without bash when the host has no static bash) stays an
environment failure. Deleting the image's bash no longer breaks anything: tbflow runs test.sh with
its own static bash from the read-only tools volume (the deletion is still shown).

Disk full is played on a 1 MB tmpfs the test gives the container (never the host's disk)."""

import threading
import time

import pytest

from task_factory import make_task, record_of
from tbflow_process import trial_containers
from tasks_lib.container.docker_client import get_client


def _broke(rec):
    return [f for f in rec.flags if f.kind == "broke-container"]


@pytest.mark.docker
def test_agent_that_kills_pid_1_or_removes_interpreters_is_scored_zero(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "kill-pid-1", solve="kill 1\nsleep 5\n")
    make_task(ds, "rm-bash", solve="rm -f /usr/bin/bash\n")
    make_task(ds, "rm-python", solve="rm -f /usr/bin/python3 /usr/bin/python3.11\n",
              test_sh="#!/bin/bash\npython3 -c 'open(\"/logs/verifier/reward.txt\", \"w\").write(\"1\")'\n")
    result = run_job(ds, concurrency=2)
    job = tmp_path / "jobs" / "job" / "trials"

    killed = record_of(result, "kill-pid-1")
    assert (killed.validity.status, killed.validity.reward) == ("scored", 0.0), killed.validity
    (flag,) = _broke(killed)
    assert "stopped from inside" in flag.message and flag.evidence == "container-state.txt"
    state = (job / killed.trial_id / "container-state.txt").read_text()
    assert '"OOMKilled": false' in state and "die " in state and "\n  kill " not in state, state

    rec = record_of(result, "rm-python")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    (flag,) = _broke(rec)
    assert "/usr/bin/python3.11" in flag.message, flag
    assert "/usr/bin/python3.11" in (job / rec.trial_id / flag.evidence).read_text()

    rec = record_of(result, "rm-bash")  # test.sh ran with tbflow's own bash: its reward stands
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert not _broke(rec)
    (changed,) = [f for f in rec.flags if f.kind == "system-changed"]  # shown, not held against it
    assert "deleted /usr/bin/bash" in changed.message
    assert "deleted /usr/bin/bash" in (job / rec.trial_id / changed.evidence).read_text()


@pytest.mark.docker
def test_agent_that_fills_the_disk_test_sh_needs_is_scored_zero(run_job, tmp_path, monkeypatch):
    import tasks_lib.container.sandbox as sandbox

    monkeypatch.setattr(sandbox, "extra_host_config", lambda: {"tmpfs": {"/tmp": "size=1m"}})
    ds = tmp_path / "ds"
    make_task(ds, "fill", solve="head -c 2000000 /dev/zero > /tmp/fill || true\n",
              test_sh="#!/bin/bash\necho data > /tmp/work || exit 1\necho 1 > /logs/verifier/reward.txt\n")
    rec = record_of(run_job(ds), "fill")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    (flag,) = _broke(rec)
    assert flag.message == "the agent filled /tmp (tmpfs); test.sh wrote no reward"


@pytest.mark.docker
def test_container_killed_from_outside_or_image_without_bash_is_invalid_environment(run_job, tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    make_task(ds, "killed-outside", solve="sleep 30\n")
    make_task(ds, "no-bash", dockerfile="FROM tbflow/base:bookworm\nWORKDIR /app\nRUN rm /usr/bin/bash\n")

    def kill_from_outside():
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            found = trial_containers(get_client(), tmp_path, "killed-outside.oracle.1")
            if found and found[0].exec_run(["test", "-e", "/logs/agent/oracle.txt"]).exit_code == 0:
                found[0].kill()
                return
            time.sleep(0.2)

    killer = threading.Thread(target=kill_from_outside, daemon=True)
    killer.start()
    result = run_job(ds, harnesses=["oracle"], env_retries=0, concurrency=2, include=["killed-outside"])
    killer.join(5)
    rec = record_of(result, "killed-outside")
    assert (rec.validity.status, rec.validity.kind) == ("invalid", "environment"), rec.validity
    assert not _broke(rec)

    rec = record_of(run_job(ds, harnesses=["nop"], job_name="nop", include=["no-bash"]), "no-bash", harness="nop")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity  # tbflow's bash ran test.sh

    import tasks_lib.container.judge.judge_tools as judge_tools

    monkeypatch.setattr(judge_tools, "HOST_BASH_STATIC", tmp_path / "no-bash-static")  # a host without bash-static
    rec = record_of(run_job(ds, harnesses=["nop"], job_name="nop2", include=["no-bash"]), "no-bash", harness="nop")
    assert (rec.validity.status, rec.validity.kind) == ("invalid", "environment"), rec.validity
    assert "the image has no bash" in rec.validity.reason


@pytest.mark.docker
def test_agent_that_gets_its_container_oom_killed_at_the_task_limit_is_scored_zero(run_job, tmp_path):
    ds = tmp_path / "ds"
    # the container's main process is made the OOM killer's first choice, then six 25 MB processes
    # exceed the limit (each scores lower than the main process)
    solve = ("for p in /proc/[0-9]*; do [ \"$(cat $p/comm 2>/dev/null)\" = sleep ] && echo 1000 > $p/oom_score_adj; done\n"
             "for i in 1 2 3 4 5 6; do python3 -c 'b = bytearray(25 * 2**20); import time; time.sleep(8)' & done\n"
             "wait\n")
    make_task(ds, "oom", solve=solve, extra_toml="memory_mb = 96\n")
    rec = record_of(run_job(ds), "oom")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    (flag,) = _broke(rec)
    assert flag.message == "the container was OOM-killed at the task's memory limit (96 MB)", flag
