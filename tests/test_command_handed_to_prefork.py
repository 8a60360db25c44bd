"""With the warm server, a ``tbflow run`` after the first is run by the prefork process
(flows/prefork.py), which has Prefect imported already: the command's own environment, output and
exit code, Ctrl-C to the command's process group stops the job as before, and ``kill -9`` of the
command ends its job and removes its containers. The prefork keeps no model API key, and a
changed source file gives another prefork key (a stale process is never used).

Each test has its own ``PREFECT_HOME`` (the ``warm_env`` fixture), so the warm server and the
prefork are its own; both are stopped with ``tbflow server stop`` at the end.
"""

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from task_factory import make_task
from tbflow_process import ROOT, TBFLOW, alive, job_containers, preforks, running_job_containers, wait_until
from test_warm_server_shared_by_commands import daemons, tbflow

pytestmark = pytest.mark.docker


def served(home) -> list[tuple[int, str]]:
    """(child pid, command line) of every command a prefork of this PREFECT_HOME ran."""
    text = (home / "tbflow-prefork.log").read_text()
    return [(int(pid), line) for pid, line in re.findall(r"tbflow prefork: pid (\d+) runs (.*)", text)]


@pytest.fixture
def warm(tmp_path):
    home = tmp_path / "prefect-home"
    env = dict(os.environ, PREFECT_HOME=str(home), TBFLOW_SERVER_IDLE_SEC="300",
               OPENAI_API_KEY="sk-test-not-for-the-prefork", TBFLOW_HISTORY=str(tmp_path / "first.sqlite"))
    env.pop("PREFECT_API_URL", None)
    env.pop("TBFLOW_PREFORK", None)  # the suite turns it off for every other test (tests/conftest.py)
    ds = tmp_path / "ds"
    make_task(ds, "one", solve="echo ok > /app/done\n", check="[ -f /app/done ]")
    first = tbflow(env, "run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "first")
    assert first.returncode == 0, first.stdout + first.stderr
    assert served(home) == [] if (home / "tbflow-prefork.log").is_file() else True
    wait_until(lambda: preforks(home), 120, "the prefork the first run started")
    yield home, env, ds
    subprocess.run([*TBFLOW, "server", "stop"], cwd=ROOT, env=env, capture_output=True, timeout=60)
    wait_until(lambda: not daemons(home) and not preforks(home), 60, "the warm server and the prefork to stop")


def test_second_run_is_run_by_the_prefork_with_its_own_env_and_exit_code(docker_ready, tmp_path, warm):
    home, env, ds = warm
    [prefork] = preforks(home)
    with open(f"/proc/{prefork}/environ", "rb") as fh:
        assert b"sk-test-not-for-the-prefork" not in fh.read(), "the prefork kept the first command's API key"

    second_history = tmp_path / "second.sqlite"
    console_script = Path(sys.executable).parent / "tbflow"  # what ./tbflow runs (README.md)
    second = subprocess.run([str(console_script), "run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name",
                             "second"], cwd=ROOT, env=dict(env, TBFLOW_HISTORY=str(second_history)),
                            capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stdout + second.stderr
    assert [line for _, line in served(home)] == [
        f"tbflow run {ds} --jobs-dir {tmp_path / 'jobs'} --job-name second (cwd {ROOT})"]
    assert "scored: 1" in second.stdout, second.stdout
    record = json.loads((tmp_path / "jobs" / "second" / "trials" / "one.oracle.1" / "trial.json").read_text())
    assert (record["validity"]["status"], record["validity"]["reward"]) == ("scored", 1.0)
    assert second_history.is_file(), "the child did not run with the command's environment (TBFLOW_HISTORY)"

    bad = tbflow(env, "run", str(tmp_path / "no-such-dataset"), "--jobs-dir", str(tmp_path / "jobs"))
    assert len(served(home)) == 2
    assert bad.returncode == 2, bad.stdout + bad.stderr
    assert "tbflow: error: DATASET:" in bad.stderr and "does not exist" in bad.stderr


def _slow_run(client, tmp_path, env, name):
    """Start ``tbflow run`` of a task that sleeps, in a process group of its own (as a terminal
    starts a foreground command); return it once its trial container runs."""
    ds = tmp_path / "slow-ds"
    make_task(ds, "slow", solve="sleep 60\n")
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen([*TBFLOW, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", name], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        wait_until(lambda: proc.poll() is not None or running_job_containers(client, jobs / name), 240,
                   "the trial container")
    except AssertionError:
        proc.kill()
        raise
    assert proc.poll() is None, proc.communicate()
    return proc, jobs / name


def test_ctrl_c_to_the_commands_group_stops_the_handed_off_job(docker_ready, tmp_path, warm):
    home, env, _ = warm
    proc, job_dir = _slow_run(docker_ready, tmp_path, env, "c")
    try:
        [(child, _)] = served(home)
        os.killpg(proc.pid, signal.SIGINT)  # what a terminal's Ctrl-C does: the command's group only
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    assert "stopped by SIGINT" in err and f"tbflow resume {job_dir}" in err, err
    assert job_containers(docker_ready, job_dir) == []
    assert not (job_dir / "trials" / "slow.oracle.1" / "trial.json").exists()
    wait_until(lambda: not alive(child), 30, "the child that ran the job to end")


def test_kill_9_of_a_handed_off_command_ends_its_job_and_containers(docker_ready, tmp_path, warm):
    home, env, _ = warm
    proc, job_dir = _slow_run(docker_ready, tmp_path, env, "k")
    try:
        [(child, _)] = served(home)
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_until(lambda: not alive(child), 30, "the child that ran the killed command's job to end")
    wait_until(lambda: not job_containers(docker_ready, job_dir), 60, "the killed command's container to go")
    assert preforks(home), "the prefork did not survive one command's kill -9"

    done = tbflow(env, "resume", str(job_dir))
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((job_dir / "trials" / "slow.oracle.1" / "trial.json").read_text())
    assert record["validity"]["status"] == "scored", record["validity"]


def test_server_stop_lets_a_handed_off_job_finish_with_its_exit_code(docker_ready, tmp_path, warm):
    home, env, _ = warm
    ds = tmp_path / "short-ds"
    make_task(ds, "short", solve="sleep 8\necho ok > /app/done\n", check="[ -f /app/done ]")
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen([*TBFLOW, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", "s"], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        wait_until(lambda: proc.poll() is not None or running_job_containers(docker_ready, jobs / "s"), 240,
                   "the trial container")
        assert proc.poll() is None, proc.communicate()
        [prefork] = preforks(home)
        stopped = tbflow(env, "server", "stop")
        assert stopped.returncode == 0, stopped.stdout + stopped.stderr
        out, err = proc.communicate(timeout=300)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0, out + err
    record = json.loads((jobs / "s" / "trials" / "short.oracle.1" / "trial.json").read_text())
    assert (record["validity"]["status"], record["validity"]["reward"]) == ("scored", 1.0)
    wait_until(lambda: not alive(prefork), 60, "the stopped prefork to exit once its child ended")
