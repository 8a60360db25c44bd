"""The example plug-in reaches a worker the way docs/write-a-harness.md says: the page's own
deployment (its ``pull:`` steps ``set_working_directory`` and ``pip_install_requirements`` of a
``plugins.txt``) is deployed from a venv where the plug-in is installed, and a real worker runs it
on a real server (127.0.0.1, a free port). The worker's venv is new: it sees tbflow's packages
but not the plug-in until the pull step installs it, so a pull step that did not install it
fails the run (``replay`` resolves to nothing). Both of its harnesses' trials (``replay``, a
command in the container, and ``host-replay``, a loop on the worker's host) score and record the
entry point's distribution and version.

The example is built once into a wheel (pip, setuptools from PyPI by build isolation, from this
test's copy, so no ``build/`` lands in the checkout); ``plugins.txt`` pins that wheel, as a team
pins ``my-agent==1.2.0`` from its index, and the deploying venv installs the same wheel.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from plugin_fixtures import EXAMPLE
from prefect_stack import ROOT, Api, clean_env, free_port, start_session, stop_session
from task_factory import make_task
from tasks_lib.store.job_store import JobStore

pytestmark = pytest.mark.docker

DOC = ROOT / "docs" / "write-a-harness.md"


def documented_deployment() -> str:
    """The YAML block of the page's "Deployments" section."""
    text = DOC.read_text()
    section = text[text.index("## Deployments"):]
    return re.search(r"```yaml\n(.*?)```", section, re.S).group(1)


def worker_venv(path: Path) -> Path:
    """A new venv that sees this checkout's site-packages (tbflow, Prefect) through a ``.pth``
    file but has its own site-packages, where pip installs the plug-in; returns its python."""
    subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, timeout=300)
    site = path / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "tbflow-checkout.pth").write_text(f"import site; site.addsitedir({sysconfig.get_paths()['purelib']!r})\n")
    return path / "bin" / "python"


def test_documented_pull_step_installs_the_plugin_and_a_worker_runs_it(docker_ready, tmp_path):
    yaml_text = documented_deployment()
    assert "pip_install_requirements" in yaml_text and "/srv/tbflow" in yaml_text
    plugin = tmp_path / "harness-plugin"
    shutil.copytree(EXAMPLE, plugin, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    wheels = tmp_path / "wheels"
    # built by the venv's locked setuptools, without build isolation: an isolated build would fetch the newest
    # setuptools from the index, so a release published later could change (or break) this test (issue 26)
    subprocess.run([sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation", "--no-index",
                    "-w", str(wheels), str(plugin)],
                   check=True, timeout=600, capture_output=True)
    (wheel,) = wheels.glob("*.whl")
    plugins_txt = tmp_path / "plugins.txt"
    plugins_txt.write_text(f"{wheel}\n")
    prefect_file = tmp_path / "prefect.yaml"
    prefect_file.write_text("name: tbflow-plugin-test\n" + yaml_text.replace("/srv/tbflow", str(ROOT))
                            .replace("requirements_file: plugins.txt", f"requirements_file: {plugins_txt}"))
    ds = tmp_path / "ds"
    make_task(ds, "one", solve="echo ok > /app/done\n", check="[ -f /app/done ]")
    jobs = tmp_path / "jobs"

    deployer = worker_venv(tmp_path / "deploy-venv")
    subprocess.run([str(deployer), "-m", "pip", "install", "-q", str(wheel)], check=True, timeout=600,
                   capture_output=True)
    worker = worker_venv(tmp_path / "worker-venv")
    probe = subprocess.run([str(worker), "-c", "import tbflow_example_harness"], capture_output=True)
    assert probe.returncode != 0, "the worker's venv must not have the plug-in before its pull step"

    port = free_port()
    env = clean_env(tmp_path / "prefect-home", PREFECT_API_URL=f"http://127.0.0.1:{port}/api")
    server = start_session([str(worker), "-m", "prefect", "server", "start", "--host", "127.0.0.1", "--port",
                            str(port)], env, ROOT, tmp_path / "server.log")
    procs = [server]
    try:
        def prefect(py: Path, *args: str, timeout: float = 300) -> subprocess.CompletedProcess:
            return subprocess.run([str(py), "-m", "prefect", *args], env=env, cwd=ROOT, capture_output=True,
                                  text=True, timeout=timeout)

        for py, args in ((worker, ("server", "status", "--wait", "--timeout", "120")),
                         (worker, ("work-pool", "create", "tbflow", "--type", "process", "--overwrite")),
                         (deployer, ("--no-prompt", "deploy", "--all", "--prefect-file", str(prefect_file)))):
            res = prefect(py, *args)
            assert res.returncode == 0, f"prefect {' '.join(args)}:\n{res.stdout}\n{res.stderr}"
        procs.append(start_session([str(worker), "-m", "prefect", "worker", "start", "--pool", "tbflow"], env, ROOT,
                                   tmp_path / "worker.log"))
        res = prefect(worker, "deployment", "run", "tbflow-job/replay-nightly", "--param", f'dataset="{ds}"',
                      "--param", 'harnesses=["replay", "host-replay"]',
                      "--param", f'jobs_dir="{jobs}"', "--param", 'job_name="plug"', "--watch", timeout=600)
        worker_log = (tmp_path / "worker.log").read_text(errors="replace")
        assert res.returncode == 0, f"{res.stdout}\n{res.stderr}\n--- worker ---\n{worker_log[-6000:]}"

        (run,) = Api(f"http://127.0.0.1:{port}/api").flow_runs()
        assert run["state"]["type"] == "COMPLETED", run["state"]
        assert "harness:replay" in run["tags"]
        project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
        for trial in ("one.replay.1", "one.host-replay.1"):  # a command in the container; a loop on the worker
            record = JobStore(jobs / "plug").read_trial(trial)
            assert record is not None and record.validity.status == "scored" and record.validity.reward == 1.0, trial
            source = record.harness_source
            assert source is not None and (source.origin, source.distribution, source.distribution_version) == (
                "entry-point", project["name"], project["version"])
        installed = subprocess.run([str(worker), "-c", "import tbflow_example_harness as m; print(m.__file__)"],
                                   capture_output=True, text=True)
        assert str(tmp_path / "worker-venv") in installed.stdout, "the pull step did not install into the worker's venv"
    finally:
        for proc in reversed(procs):
            stop_session(proc)
