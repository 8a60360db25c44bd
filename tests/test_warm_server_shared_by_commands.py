"""The warm local Prefect server (flows/local_server/warm_server_main.py): the first ``tbflow run`` starts it, the
next commands reuse it instead of paying Prefect's server start-up again, ``kill -9`` of a command
attached to it still removes that command's containers (the server stays for the others), two
commands starting at once get one server, and it stops after its idle timeout or on
``tbflow server stop``.

Every test has its own ``PREFECT_HOME``, so its server is its own (the server's key hashes it);
each test stops its server at the end.
"""

import json
import os
import subprocess

import pytest

from task_factory import make_task
from tbflow_process import ROOT, TBFLOW, alive, cmdline, job_containers, running_job_containers, wait_until

pytestmark = pytest.mark.docker


def daemons(home, idle: float = 300) -> list[int]:
    """Warm servers started for this PREFECT_HOME and idle timeout (matched by the key in their
    command line: it hashes both)."""
    from flows.local_server import warm_server
    key = _in_env(home, lambda: warm_server.server_key(idle=idle))
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and "flows.local_server.warm_server_main" in cmdline(int(p))
            and key in cmdline(int(p))]


def _in_env(home, fn):
    saved = os.environ.get("PREFECT_HOME")
    os.environ["PREFECT_HOME"] = str(home)
    try:
        return fn()
    finally:
        if saved is None:
            os.environ.pop("PREFECT_HOME")
        else:
            os.environ["PREFECT_HOME"] = saved


@pytest.fixture
def warm_env(tmp_path):
    home = tmp_path / "prefect-home"
    env = dict(os.environ, PREFECT_HOME=str(home), TBFLOW_SERVER_IDLE_SEC="300", OPENAI_API_KEY="sk-test-not-for-the-server")
    env.pop("PREFECT_API_URL", None)
    yield home, env
    subprocess.run([*TBFLOW, "server", "stop"], cwd=ROOT, env=env, capture_output=True, timeout=60)
    wait_until(lambda: not daemons(home), 60, "the warm server to stop")


def tbflow(env, *args, timeout=600):
    return subprocess.run([*TBFLOW, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def test_second_run_reuses_the_server_the_first_started(docker_ready, tmp_path, warm_env):
    home, env = warm_env
    ds = tmp_path / "ds"
    make_task(ds, "one", solve="echo ok > /app/done\n", check="[ -f /app/done ]")
    first = tbflow(env, "run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "a")
    assert first.returncode == 0, first.stdout + first.stderr
    servers = daemons(home)
    assert len(servers) == 1, "the first run left no warm server (or several)"
    status = json.loads(tbflow(env, "server", "status").stdout)
    assert status["pid"] == servers[0] and status["attached"] == 0

    second = tbflow(env, "run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "b")
    assert second.returncode == 0, second.stdout + second.stderr
    assert daemons(home) == servers, "the second run started a server of its own"
    record = json.loads((tmp_path / "jobs" / "b" / "trials" / "one.oracle.1" / "trial.json").read_text())
    assert (record["validity"]["status"], record["validity"]["reward"]) == ("scored", 1.0)

    environ = f"/proc/{servers[0]}/environ"
    with open(environ, "rb") as fh:
        assert b"sk-test-not-for-the-server" not in fh.read(), "the warm server kept the first command's API key"

    stopped = tbflow(env, "server", "stop")
    assert "stopping" in stopped.stdout
    wait_until(lambda: not alive(servers[0]), 60, "the server to stop on `tbflow server stop`")
    assert tbflow(env, "server", "status").returncode == 1


def test_kill_9_of_an_attached_run_removes_its_containers_server_stays(docker_ready, tmp_path, warm_env):
    home, env = warm_env
    ds = tmp_path / "ds"
    make_task(ds, "slow", solve="sleep 30\n")
    jobs = tmp_path / "jobs"
    proc = subprocess.Popen([*TBFLOW, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", "j"], cwd=ROOT,
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        wait_until(lambda: proc.poll() is not None or running_job_containers(docker_ready, jobs / "j"), 240,
                   "the trial container")
        assert proc.poll() is None, proc.stdout.read()
        servers = daemons(home)
        assert len(servers) == 1
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    wait_until(lambda: not job_containers(docker_ready, jobs / "j"), 60,
               "the warm server to remove the killed run's container")
    assert daemons(home) == servers, "the warm server did not survive one attached command's kill -9"
    status = json.loads(tbflow(env, "server", "status").stdout)
    assert status["attached"] == 0

    done = tbflow(env, "resume", str(jobs / "j"))
    assert done.returncode == 0, done.stdout + done.stderr
    record = json.loads((jobs / "j" / "trials" / "slow.oracle.1" / "trial.json").read_text())
    assert record["validity"]["status"] == "scored", record["validity"]
    assert daemons(home) == servers


def test_two_runs_starting_at_once_share_one_server(docker_ready, tmp_path, warm_env):
    home, env = warm_env
    ds = tmp_path / "ds"
    make_task(ds, "one", solve="echo ok > /app/done\n", check="[ -f /app/done ]")
    procs = [subprocess.Popen([*TBFLOW, "run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", name],
                              cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
             for name in ("x", "y")]
    outputs = [p.communicate(timeout=600)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    assert len(daemons(home)) == 1
    for name in ("x", "y"):
        assert (tmp_path / "jobs" / name / "trials" / "one.oracle.1" / "trial.json").is_file()


def test_server_stops_by_itself_after_its_idle_timeout(docker_ready, tmp_path, warm_env):
    home, env = warm_env
    env = dict(env, TBFLOW_SERVER_IDLE_SEC="3")
    ds = tmp_path / "ds"
    make_task(ds, "one")
    done = tbflow(env, "run", str(ds), "--jobs-dir", str(tmp_path / "jobs"))
    assert done.returncode == 0, done.stdout + done.stderr
    wait_until(lambda: not daemons(home, idle=3), 120, "the idle server to stop by itself")
    assert "stopped" in (home / "tbflow-server.log").read_text()


def test_status_and_stop_from_another_checkout_leave_this_server_alone(docker_ready, tmp_path, warm_env):
    """Two checkouts sharing a PREFECT_HOME reach one server socket: the other's ``status`` showed
    this server as its own and its ``stop`` stopped it. Another install is another interpreter
    (a second venv that sees this checkout's packages), so its server version differs."""
    import sys
    import sysconfig

    home, env = warm_env
    ds = tmp_path / "ds"
    make_task(ds, "one")
    first = tbflow(env, "run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "a")
    assert first.returncode == 0, first.stdout + first.stderr
    (server,) = daemons(home)
    other = tmp_path / "other-venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(other)], check=True, timeout=120)
    site = other / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "checkout.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")

    def from_other(*args):
        return subprocess.run([str(other / "bin" / "python"), "-m", "flows.cli.main", *args], cwd=ROOT, env=env,
                              capture_output=True, text=True, timeout=120)

    seen = from_other("server", "status")
    assert seen.returncode == 1 and "another tbflow's" in seen.stdout and str(server) in seen.stdout, seen.stdout
    refused = from_other("server", "stop")
    assert refused.returncode == 1 and "left running" in refused.stdout and "--any" in refused.stdout, refused.stdout
    assert alive(server) and json.loads(tbflow(env, "server", "status").stdout)["pid"] == server
    forced = from_other("server", "stop", "--any")
    assert forced.returncode == 0 and "stopping" in forced.stdout, forced.stdout + forced.stderr
    wait_until(lambda: not alive(server), 60, "the server to stop on `tbflow server stop --any`")
