"""A job stopped mid-trial (SIGINT like Ctrl-C, SIGTERM like a Prefect cancellation or a
worker shutdown) at each stage leaves no record for the interrupted trial and no container of the
job; resume re-runs exactly that trial and keeps the finished one (no container for it)."""

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from container_events import JobContainerEvents
from task_factory import make_task, record_of

from tasks_lib.container.docker_client import LABEL_JOB, LABEL_TRIAL
from tasks_lib.container.judge_tools import JUDGE, LAUNCH

ROOT = Path(__file__).resolve().parents[1]
SLOW = "b-slow.oracle.1"


STAGES = {
    # stage: (task overrides, condition that says the stage is running)
    "build": (dict(dockerfile="FROM tbflow/base:bookworm\nWORKDIR /app\nARG N={nonce}\nRUN sleep 20\n"),
              lambda c, trial_dir: any(trial_dir.parent.parent.glob(".builds/*b-slow*.log"))),  # build lane
    # the agent and the verifier: the exec that starts them, as the engine reports it (live events)
    # slow on purpose: a loaded worker may take seconds to deliver the signal after the stage started
    "agent": (dict(solve="sleep 20\necho ok > /app/done\n", check="[ -f /app/done ]"),
              lambda seen, trial_dir: seen.exec_started(SLOW, LAUNCH)),
    # (r1, 4 workers: a 20-s test.sh ended and was recorded before the stop reached the trial)
    "verifier": (dict(test_sh="#!/bin/bash\nsleep 60\necho 1 > /logs/verifier/reward.txt\n", verifier_timeout=180),
                 lambda seen, trial_dir: seen.exec_started(SLOW, f"{JUDGE} verify ")),
    # a sparse 8 GiB file: written at once, but its download streams 8 GiB (2 GiB took ~10-20 s
    # here, and k1 recorded the trial: the stop reached it after a 21-s download had ended); the
    # download is seen from the host side (its first file appears in the trial dir), a stat
    # that a loaded machine cannot make miss the window the way a `docker exec` poll did
    "download": (dict(test_sh="#!/bin/bash\ntruncate -s 8G /logs/verifier/big.bin\n"
                              "echo 1 > /logs/verifier/reward.txt\n"),
                 lambda c, trial_dir: (trial_dir / "verifier" / "big.bin").exists()),
}


@pytest.mark.parametrize("stage, sig", [("build", signal.SIGINT), ("agent", signal.SIGINT),
                                        ("verifier", signal.SIGINT), ("download", signal.SIGINT),
                                        ("agent", signal.SIGTERM)])
def test_interrupt_at_stage_then_resume(run_job, docker_ready, tmp_path, stage, sig):
    ds = tmp_path / "ds"
    make_task(ds, "a-quick")
    overrides, running = STAGES[stage]
    overrides = {k: v.format(nonce=uuid.uuid4().hex) if isinstance(v, str) else v for k, v in overrides.items()}
    make_task(ds, "b-slow", **overrides)
    jobs = tmp_path / "jobs"
    with JobContainerEvents(docker_ready, job_dir=jobs / "j", execs=True) as first_run:
        proc = subprocess.Popen([sys.executable, "-m", "flows.cli.main", "run", str(ds), "--jobs-dir", str(jobs),
                                 "--job-name", "j", "--order", "name"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                text=True)
        trial_dir = jobs / "j" / "trials" / SLOW
        try:
            deadline = time.monotonic() + 120
            while not (running(first_run, trial_dir) and (jobs / "j" / "trials" / "a-quick.oracle.1" / "trial.json").exists()):
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, f"stage {stage} never started"
                time.sleep(0.05)
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=600)  # stopping mid-download of 2 GiB took over 60 s at load 20
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode in (130, 143, -sig), out
    job_id = json.loads((jobs / "j" / "job.json").read_text())["job_id"]
    assert docker_ready.containers.list(all=True, filters={"label": f"{LABEL_JOB}={job_id}"}) == []
    assert not (trial_dir / "trial.json").exists(), "an interrupted trial must leave no record"
    quick_record = (jobs / "j" / "trials" / "a-quick.oracle.1" / "trial.json").read_text()

    with JobContainerEvents(docker_ready, job_id=job_id) as seen:
        result = run_job(ds, job_name="j")
    rec = record_of(result, "b-slow")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert (jobs / "j" / "trials" / "a-quick.oracle.1" / "trial.json").read_text() == quick_record
    # one trial container for the slow trial only (each comes with a filler that owns its judge volumes)
    trials = [a.get(LABEL_TRIAL) for a in seen.created if a.get("tbflow.role") != "filler"]
    assert trials == [SLOW]
