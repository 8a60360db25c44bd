"""A command the prefork runs (flows/local_server/prefork_main.py) writes to the user's terminal exactly what it
writes when it runs itself, ANSI colours included. It used not to: the Rich consoles were built
when the prefork imported the CLI, for the prefork's log file, so a handed-off command printed
no colour (flows/cli/console.py now builds them where they are used).

The command is ``tbflow resume`` of a job whose trials are all recorded (the results table, with
Rich's colours, and no Prefect or Docker needed), on a pseudo-terminal: the first time with no
prefork running (it runs itself, and starts the prefork as it exits), then handed off."""

import os
import subprocess

from flows.job.job_config import JobConfig
from flows.job.job_plan import plan
from flows.job.job_result import job_record
from pty_capture import run_in_pty
from report_fixtures import make_trial
from task_factory import make_task
from tasks_lib.store.job_store import JobStore
from tbflow_process import ROOT, TBFLOW, preforks, wait_until
from test_command_handed_to_prefork import served

TERMINAL_VARS = ("NO_COLOR", "FORCE_COLOR", "COLUMNS", "LINES", "TTY_COMPATIBLE", "TTY_INTERACTIVE")


def _recorded_job(tmp_path):
    """A job dir as ``tbflow run`` leaves it, planned by the real planner, its trials recorded
    (one scored, one not: both of the table's colours)."""
    ds = tmp_path / "ds"
    make_task(ds, "one", solve="true\n")
    make_task(ds, "two", solve="true\n")
    planned = plan(JobConfig(dataset=str(ds), jobs_dir=str(tmp_path / "jobs"), job_name="recorded"), "job-1")
    store = JobStore(planned.job_dir)
    store.write_job(job_record(planned))
    for spec, invalid in zip(planned.specs, (None, "verifier"), strict=True):
        store.write_trial(make_trial(spec.task_name, invalid=invalid, reward=1.0).model_copy(update={"spec": spec}))
    return planned.job_dir


def test_handed_off_command_prints_the_bytes_and_colours_of_a_direct_one(tmp_path):
    job_dir = _recorded_job(tmp_path)
    home = tmp_path / "prefect-home"
    env = {k: v for k, v in os.environ.items() if k not in TERMINAL_VARS}
    env.update(PREFECT_HOME=str(home), TBFLOW_SERVER_IDLE_SEC="300", TERM="xterm-256color")
    env.pop("PREFECT_API_URL", None)
    env.pop("TBFLOW_PREFORK", None)  # the suite turns it off (tests/conftest.py)
    resume = [*TBFLOW, "resume", str(job_dir)]
    try:
        code, direct = run_in_pty(resume, env, str(ROOT))
        assert code == 0, direct
        assert served(home) == []
        wait_until(lambda: preforks(home), 120, "the prefork the first resume started")
        code, handed = run_in_pty(resume, env, str(ROOT))
        assert code == 0, handed
        assert [line for _, line in served(home)] == [f"tbflow resume {job_dir} (cwd {ROOT})"]
    finally:
        subprocess.run([*TBFLOW, "server", "stop"], cwd=ROOT, env=env, capture_output=True, timeout=60)
        wait_until(lambda: not preforks(home), 60, "the prefork to stop")
    assert b"\x1b[32mscored" in direct and b"\x1b[31minvalid" in direct, direct  # a colour terminal, seen as one
    assert b"\r\n" in direct  # and its line discipline
    assert handed == direct
