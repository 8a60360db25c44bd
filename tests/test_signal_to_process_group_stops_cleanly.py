"""SIGINT, SIGTERM or SIGHUP to tbflow's whole process group (as a terminal, a CI runner or a
process supervisor sends them) used to kill the embedded Prefect server first, then print pages
of ConnectError tracebacks; SIGHUP left the trial container running, and a tbflow started in the
background by a script ignored SIGINT. Each now ends with one short summary, exit code
128 + the signal, no traceback, no container and no server left; a second signal stops at once."""

import os
import signal
import subprocess

import pytest

from task_factory import make_task
from tbflow_process import (ROOT, TBFLOW, alive, job_containers, running_job_containers, server_processes,
                            wait_until)

pytestmark = [pytest.mark.docker, pytest.mark.usefixtures("per_command_server")]


def _ignore_sigint() -> None:
    """What a non-interactive shell does for a job started with ``&``."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


@pytest.mark.parametrize("sig, twice", [(signal.SIGINT, False), (signal.SIGTERM, False), (signal.SIGHUP, False),
                                        (signal.SIGINT, True)])
def test_signal_to_group_ends_with_summary_and_exit_code(docker_ready, tmp_path, sig, twice):
    ds = tmp_path / "ds"
    make_task(ds, "a-quick")
    make_task(ds, "b-slow", solve="sleep 900\n", agent_timeout=900)  # slow on purpose: still running when signalled
    jobs = tmp_path / "jobs"
    # two slots: a trial whose image is present starts before one whose image the build lane makes
    # (trial_runner); with one, the slow trial took the slot first and the quick one never ran
    proc = subprocess.Popen([*TBFLOW, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", "j", "--order", "name",
                             "--concurrency", "2"], cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            start_new_session=True, preexec_fn=_ignore_sigint)
    try:
        quick = jobs / "j" / "trials" / "a-quick.oracle.1" / "trial.json"
        wait_until(lambda: proc.poll() is not None or (quick.exists()
                                                       and running_job_containers(docker_ready, jobs / "j")),
                   300, "the slow trial's container")
        assert proc.poll() is None, proc.stdout.read()
        servers = server_processes(proc.pid)
        os.killpg(proc.pid, sig)
        if twice:
            os.killpg(proc.pid, sig)
        out, _ = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert proc.returncode == 128 + sig, out
    assert "Traceback" not in out and "ConnectError" not in out, out
    if not twice:
        assert f"stopped by {signal.Signals(sig).name}: 1 of 2 trials recorded" in out, out
        assert "b-slow.oracle.1" in out and f"tbflow resume {jobs / 'j'}" in out, out
    if twice:  # the second signal exits at once: a removal the first one began may still be finishing in dockerd
        wait_until(lambda: job_containers(docker_ready, jobs / "j") == [], 30, "the job's containers to be removed")
    assert job_containers(docker_ready, jobs / "j") == []
    wait_until(lambda: not any(alive(p) for p in servers), 15, "the server to exit")
    assert not (jobs / "j" / "trials" / "b-slow.oracle.1" / "trial.json").exists()
