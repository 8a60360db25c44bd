"""A job stopped mid-trial (SIGINT like Ctrl-C, SIGTERM like a Prefect cancellation or a
worker shutdown) at each stage leaves no record for the interrupted trial and no container of the
job; resume re-runs exactly that trial and keeps the finished one (no container for it).

The slow side is slow on purpose, and held rather than timed: the agent, verifier and download
stages wait for marker files the test creates in the trial's container (``release``), so on the
first run the stage cannot end before the stop reaches it however loaded the machine is (a
20-s stage once ended and was recorded first: r1, k1, s1 and CI of stop 25), and on the resume
the test lets it through at once.
"""

import json
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from container_events import JobContainerEvents
from container_markers import MarkerWriter
from task_factory import make_task, record_of

from tasks_lib.container.docker_client import LABEL_JOB, LABEL_JOB_DIR, LABEL_TRIAL
from tasks_lib.container.judge.judge_tools import JUDGE, LAUNCH

ROOT = Path(__file__).resolve().parents[1]
SLOW = "b-slow.oracle.1"
GO, SMALL = "/tmp/tbflow-test-go", "/tmp/tbflow-test-small"
HOLD = f"until [ -e {GO} ]; do sleep 0.1; done\n"


STAGES = {
    # stage: (task overrides, condition that says the stage is running, markers the test creates
    # on the first run, markers on the resume)
    "build": (dict(dockerfile="FROM tbflow/base:bookworm\nWORKDIR /app\nARG N={nonce}\nRUN sleep 20\n"),
              lambda c, trial_dir: any(trial_dir.parent.parent.glob(".builds/*b-slow*.log")), (), ()),  # build lane
    # the agent and the verifier: the exec that starts them, as the engine reports it (live events)
    "agent": (dict(solve=HOLD + "echo ok > /app/done\n", check="[ -f /app/done ]", agent_timeout=600),
              lambda seen, trial_dir: seen.exec_started(SLOW, LAUNCH), (), (GO,)),
    "verifier": (dict(test_sh="#!/bin/bash\n" + HOLD + "echo 1 > /logs/verifier/reward.txt\n", verifier_timeout=600),
                 lambda seen, trial_dir: seen.exec_started(SLOW, f"{JUDGE} verify "), (), (GO,)),
    # a sparse 1 TiB file: written at once, but its download streams for minutes (up to tbflow's
    # cap); the resume's test.sh, finding SMALL (made before GO lets the agent end), writes none.
    # The download is seen from the host side: its first file appears in the trial dir.
    "download": (dict(solve=HOLD, test_sh=f"#!/bin/bash\n[ -e {SMALL} ] || truncate -s 1T /logs/verifier/big.bin\n"
                                          "echo 1 > /logs/verifier/reward.txt\n"),
                 lambda c, trial_dir: (trial_dir / "verifier" / "big.bin").exists(), (GO,), (SMALL, GO)),
}


def release(client, job_dir: Path, markers: tuple[str, ...]) -> MarkerWriter:
    """Creates ``markers`` (in order) in the slow trial's container once it runs."""
    def slow_trial(labels: dict) -> bool:
        return (labels.get(LABEL_JOB_DIR) == str(job_dir.resolve()) and labels.get(LABEL_TRIAL) == SLOW
                and labels.get("tbflow.role") != "filler")
    return MarkerWriter(client, LABEL_JOB_DIR, slow_trial, markers, once=True)


@pytest.mark.parametrize("stage, sig", [("build", signal.SIGINT), ("agent", signal.SIGINT),
                                        ("verifier", signal.SIGINT), ("download", signal.SIGINT),
                                        ("agent", signal.SIGTERM)])
def test_interrupt_at_stage_then_resume(run_job, docker_ready, tmp_path, stage, sig):
    ds = tmp_path / "ds"
    make_task(ds, "a-quick")
    overrides, running, first_markers, resume_markers = STAGES[stage]
    overrides = {k: v.format(nonce=uuid.uuid4().hex) if isinstance(v, str) else v for k, v in overrides.items()}
    make_task(ds, "b-slow", **overrides)
    jobs = tmp_path / "jobs"
    with JobContainerEvents(docker_ready, job_dir=jobs / "j", execs=True) as first_run, \
            release(docker_ready, jobs / "j", first_markers):
        proc = subprocess.Popen([sys.executable, "-m", "flows.cli.main", "run", str(ds), "--jobs-dir", str(jobs),
                                 "--job-name", "j", "--order", "name",
                                 # two slots: a trial whose image is present starts before one whose image
                                 # the build lane makes (trial_runner), and the held slow trial must not
                                 # keep the quick one from ever running
                                 "--concurrency", "2"], cwd=ROOT, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT,
                                text=True)
        trial_dir = jobs / "j" / "trials" / SLOW
        try:
            deadline = time.monotonic() + 120
            while not (running(first_run, trial_dir) and (jobs / "j" / "trials" / "a-quick.oracle.1" / "trial.json").exists()):
                assert proc.poll() is None, proc.stdout.read()
                assert time.monotonic() < deadline, f"stage {stage} never started"
                time.sleep(0.05)
            sent = time.strftime("%H:%M:%S", time.gmtime()) + f".{int(time.time() * 1000) % 1000:03d}Z"
            proc.send_signal(sig)
            out, _ = proc.communicate(timeout=600)
        finally:
            if proc.poll() is None:
                proc.kill()
    assert proc.returncode in (130, 143, -sig), out
    job_id = json.loads((jobs / "j" / "job.json").read_text())["job_id"]
    assert docker_ready.containers.list(all=True, filters={"label": f"{LABEL_JOB}={job_id}"}) == []
    if (trial_dir / "trial.json").exists():
        rec = json.loads((trial_dir / "trial.json").read_text())
        raise AssertionError(f"an interrupted trial must leave no record; it has one, ended "
                             f"{rec['ended_at']}, verdict {rec['validity']}; signal sent {sent}\n{out}")
    quick_record = (jobs / "j" / "trials" / "a-quick.oracle.1" / "trial.json").read_text()

    with JobContainerEvents(docker_ready, job_id=job_id) as seen, release(docker_ready, jobs / "j", resume_markers):
        result = run_job(ds, job_name="j")
    rec = record_of(result, "b-slow")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert (jobs / "j" / "trials" / "a-quick.oracle.1" / "trial.json").read_text() == quick_record
    # one trial container for the slow trial only (each comes with a filler that owns its judge volumes)
    trials = [a.get(LABEL_TRIAL) for a in seen.created if a.get("tbflow.role") != "filler"]
    assert trials == [SLOW]
