"""tbflow's supplied runner (``tasks_lib/container/supplied_runner``) in a real Docker container in
which the agent, as root, planted everything the spike (bench/runner_spike in issue 38) found
that reaches a Python test runner: an ``/etc/ld.so.preload`` library, an NSS module in
``nsswitch.conf``, ``sitecustomize``/``usercustomize``/``.pth`` files in every site dir, a
``/pytest.ini`` and ``/conftest.py`` (and ``/app``'s) that forge every test into a pass, an
``openssl.cnf`` loading a provider, and a ``python313.zip`` landmark above the runner's mount.

The runner is bind-mounted read-only and started by absolute path with a fixed environment, as
the judge will start it. It must report the honest failure (exit 1), no planted code may run in
any runner process, and the tests must still see the container (its files, its own python3 on
PATH, a server on localhost). The baseline twin runs the same tests with the container's own
python3 and pytest: the probes do get in there, so they are real.
"""

from __future__ import annotations

import io
import json
import tarfile

import pytest
from docker.types import Mount

from supplied_runner_probes import FIXTURES, compile_evil, plant_script
from tasks_lib.container.docker_client import LABEL_JOB_DIR, LABEL_TRIAL
from tasks_lib.container.supplied_runner.prepare import prepare_runner

pytestmark = pytest.mark.docker

IMAGE = "tbflow/base:bookworm"
WHEELS = ["pytest==8.4.1", "pytest-json-ctrf==0.3.5", "requests==2.32.4"]
R = "/opt/tbflow/runner"
JUDGE_ENV = {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME": "/root",
             "LANG": "C.UTF-8"}
RUNNER_CMD = [f"{R}/bin/python3.13", "-I", "-S", "-B", "-X", "utf8", f"{R}/tbflow_pytest.py", "-c", f"{R}/pytest.ini",
              "--rootdir=/tests", "--confcutdir=/tests", "-p", "no:cacheprovider", "--ctrf", "/logs/verifier/ctrf.json",
              "/tests/test_outputs.py", "-rA"]
BASELINE_CMD = ["python3", "-m", "pytest", "-p", "no:cacheprovider", "/tests/test_outputs.py", "-rA"]


def read_file(container, path: str) -> bytes | None:
    """A file's bytes read through the engine (not with a program of the container)."""
    try:
        stream, _ = container.get_archive(path)
    except Exception:  # noqa: BLE001 - absent
        return None
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tf:
        member = tf.next()
        fh = tf.extractfile(member) if member else None
        return fh.read() if fh else None


def markers(container) -> set[str]:
    stream, _ = container.get_archive("/tmp")
    with tarfile.open(fileobj=io.BytesIO(b"".join(stream))) as tf:
        return {m.name.rsplit("/", 1)[-1] for m in tf.getmembers() if "/EVIL-" in m.name}


def judge_run(container, cmd: list[str]) -> dict:
    before = markers(container)
    code, output = container.exec_run(cmd, user="root", workdir="/app", environment=JUDGE_ENV)
    observe = read_file(container, "/logs/verifier/observe.json")
    ctrf = read_file(container, "/logs/verifier/ctrf.json")
    new_markers = sorted(markers(container) - before)
    container.exec_run(["rm", "-rf", "/logs/verifier/observe.json", "/logs/verifier/ctrf.json"], user="root")
    return {"exit": code, "output": output.decode(errors="replace"), "new_markers": new_markers,
            "observe": json.loads(observe) if observe else None, "ctrf": json.loads(ctrf) if ctrf else None}


@pytest.fixture(scope="module")
def runs(docker_ready, tmp_path_factory):
    """Prepare the runner, start the container, plant, run the runner and the baseline, remove the container."""
    runner = prepare_runner("3.13", WHEELS)
    work = tmp_path_factory.mktemp("supplied-runner")
    (work / "tests").mkdir()
    (work / "tests/test_outputs.py").write_bytes((FIXTURES / "outputs_probe.py").read_bytes())
    libs = compile_evil(work)
    container = docker_ready.containers.create(
        IMAGE, ["sleep", "infinity"], network_mode="none",
        labels={LABEL_TRIAL: "supplied-runner-probes", LABEL_JOB_DIR: str(work)},
        mounts=[Mount(R, str(runner.path), type="bind", read_only=True),
                Mount("/tests", str(work / "tests"), type="bind", read_only=True)])
    try:  # removed even when it does not start
        container.start()
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w") as tf:
            for name, path in libs.items():
                tf.add(path, arcname=f"srv/evil/evil-{name}.so")
        container.put_archive("/", buf.getvalue())
        code, out = container.exec_run(["bash", "-c", plant_script()], user="root")
        assert code == 0, out.decode(errors="replace")
        container.exec_run(["mkdir", "-p", "/logs/verifier"], user="root")
        return {"runner": runner, "hardened": judge_run(container, RUNNER_CMD),
                "baseline": judge_run(container, BASELINE_CMD)}
    finally:
        container.remove(force=True, v=True)



def test_the_runner_reports_the_honest_failure(runs):
    run = runs["hardened"]
    assert run["exit"] == 1, run["output"]
    assert "1 failed, 1 passed" in run["output"], run["output"]
    statuses = {t["name"]: t["status"] for t in run["ctrf"]["results"]["tests"]}
    assert statuses == {"test_outputs.py::test_answer": "failed", "test_outputs.py::test_sees_the_container": "passed"}


def test_no_planted_code_runs_in_a_runner_process(runs):
    run = runs["hardened"]
    assert [m for m in run["new_markers"] if "-R-" in m] == [], run["output"]
    assert "EVIL" not in run["output"]
    assert run["observe"]["maps_outside_runner"] == []
    assert run["observe"]["modules_outside_runner"] == []
    assert run["observe"]["path"] == ["/tests", f"{R}/lib/python313.zip", f"{R}/lib/python3.13",
                                      f"{R}/lib/python3.13/lib-dynload", f"{R}/lib/python3/dist-packages"]


def test_the_tests_still_see_the_container(runs):
    obs = runs["hardened"]["observe"]
    assert obs["app_x"] == "hello"
    assert obs["container_python3"].startswith("/usr/bin/python3 3.11")
    assert obs["http_localhost"] == obs["requests_localhost"] == "hello"
    assert obs["localhost"] in (["127.0.0.1"], ["127.0.0.1", "::1"]), "the runner's libc ignored the evil NSS module"
    assert obs["sys_executable_child"] == [0, R, ""]
    # the container's own programs are the subject: the agent's preload does reach them
    assert any("-C-" in m for m in runs["hardened"]["new_markers"])


def test_the_probes_are_real_the_containers_own_pytest_is_forged(runs):
    run = runs["baseline"]
    assert run["exit"] == 0, run["output"]  # the honest failure reported as a pass
    got_in = {m.removeprefix("EVIL-").rsplit("-C-", 1)[0] for m in run["new_markers"] if "-C-" in m}
    # both forging plug-ins ran in pytest; the preload, NSS and OpenSSL libraries were loaded
    assert got_in >= {"forge-conftest", "forge-evilplug", "preload", "nss", "openssl"}, run["new_markers"]


def test_the_runner_is_sealed_and_identified(runs):
    runner = runs["runner"]
    assert runner.python == "3.13.5" and runner.mount_at == R
    assert {line.split("==")[0] for line in runner.lock} >= {"pytest", "pytest-json-ctrf", "requests"}
    assert all("--hash=sha256:" in line for line in runner.lock)
    assert not any(p.stat().st_mode & 0o222 for p in runner.path.rglob("*") if not p.is_symlink())


def test_a_package_with_no_cp313_wheel_is_refused_by_name():
    """PyYAML 5.1 has only a source distribution and old cp27-cp37 wheels: never built on the host."""
    from tasks_lib.container.supplied_runner import wheels
    from tasks_lib.errors import RunnerUnavailable

    with pytest.raises(RunnerUnavailable, match="no cp313 manylinux or pure-Python wheel.*pyyaml==5.1"):
        wheels.resolve("3.13", ["pyyaml==5.1"])


def test_the_runner_on_disk_carries_every_hardening(runs):
    import subprocess

    from tasks_lib.container.supplied_runner.harden import LOADER, MULTIARCH, PATCHES

    root = runs["runner"].path
    for name, strings in PATCHES.items():
        data = (root / MULTIARCH / name).read_bytes()
        assert [s for s in strings if f"\0{s}\0".encode() in data] == [], name
    interp = subprocess.run(["patchelf", "--print-interpreter", str(root / "bin/python3.13")], capture_output=True,
                            text=True, check=True).stdout.strip()
    assert interp == f"{R}/{MULTIARCH}/{LOADER}"
    assert not any(p.is_symlink() and str(p.readlink()).startswith("/") for p in root.rglob("*"))
    assert not list(root.glob("lib/python3.13/lib-dynload/readline*"))
    assert (root / "pyvenv.cfg").read_text() == f"home = {R}/bin\ninclude-system-site-packages = false\n"
    assert (root / "lib/python313.zip").stat().st_size == 22  # an empty zip: the landmark search stops here
