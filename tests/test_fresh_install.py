"""A fresh machine installs exactly requirements.lock and builds what it needs from nothing (issue 26).

What broke: httpx 0.29.0 was published, and a clean clone could no longer install. A new venv's
pip (23.2.1, bundled with Python 3.11.7) resolved prefect's ``httpx[http2]`` extra against the
index instead of taking the lock's ``httpx==0.28.1``, found 0.29.0 and refused it under
``--require-hashes``. A developer's long-lived venv never showed it. These tests put a newer
release of locked packages on an index the install sees (a local stand-in), install into a
brand-new venv made by the machine's own Python, and check that exactly the lock arrives; and
they build the base image under a throwaway tag the way a machine without images does.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re
import subprocess
import sys
import uuid
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
INSTALL = ROOT / "scripts" / "install-venv.sh"
LOCK = ROOT / "requirements.lock"
PIN = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)(?:\[[^\]]*\])?==([^\s;\\]+)", re.M)


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _locked() -> dict[str, str]:
    return {_norm(n): v for n, v in PIN.findall(LOCK.read_text())}


def _record_line(path: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{path},sha256={digest},{len(data)}"


def _standin_wheel(where: Path, name: str, version: str) -> Path:
    """A valid pure-Python wheel ``name-version`` that no install must ever take."""
    files = {
        f"{name}/__init__.py": b"raise ImportError('a stand-in release was installed')\n",
        f"{name}-{version}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{name}-{version}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: tbflow-test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = f"{name}-{version}.dist-info/RECORD"
    lines = [_record_line(p, d) for p, d in files.items()] + [f"{record},,"]
    wheel = where / f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as z:
        for p, d in files.items():
            z.writestr(p, d)
        z.writestr(record, "\n".join(lines) + "\n")
    return wheel


def _installed(venv: Path) -> dict[str, str]:
    out = subprocess.run([str(venv / "bin/python"), "-m", "pip", "list", "--format=freeze", "--exclude-editable"],
                         capture_output=True, text=True, check=True)
    return {_norm(n): v for n, v in PIN.findall(out.stdout)}


def test_new_release_on_the_index_cannot_change_what_a_new_venv_gets(tmp_path):
    standin = tmp_path / "index"
    standin.mkdir()
    # newer releases of: the package whose extra broke the install, the installer, the build backend
    for name in ("httpx", "pip", "setuptools"):
        _standin_wheel(standin, name, "999.0")
    venv = tmp_path / "venv"
    env = {**os.environ, "PIP_FIND_LINKS": str(standin), "HOME": str(tmp_path / "home")}
    # a resolver would take the stand-in: it is a valid candidate for prefect's `httpx[http2]>=0.23`
    probe = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--no-index", "--find-links",
                            str(standin), "-d", str(tmp_path / "dl"), "httpx>=0.23"],
                           capture_output=True, text=True, env=env)
    assert probe.returncode == 0 and (tmp_path / "dl" / "httpx-999.0-py3-none-any.whl").exists(), probe.stderr

    out = subprocess.run(["bash", str(INSTALL), str(venv)], capture_output=True, text=True, env=env,
                         stdin=subprocess.DEVNULL, timeout=600)
    assert out.returncode == 0, out.stderr[-3000:]
    # made by the machine's python3 and its bundled pip, as on a fresh machine
    assert "creating venv" in out.stderr

    installed, locked = _installed(venv), _locked()
    assert installed == locked, {k: (installed.get(k), locked.get(k)) for k in installed.keys() | locked.keys()
                                 if installed.get(k) != locked.get(k)}
    check = subprocess.run([str(venv / "bin/python"), "-c", "import flows.cli.entry, httpx; print(httpx.__version__)"],
                           capture_output=True, text=True, cwd=tmp_path)
    assert check.returncode == 0 and check.stdout.strip() == locked["httpx"], check.stderr


def test_python_older_than_requires_python_is_refused_in_one_line(tmp_path):
    fake_bin = tmp_path / "bin"
    fake_bin.mkdir()
    fake = fake_bin / "python3"
    # answers -V like Python 3.11.3 and fails any real work, as an interpreter without data_filter would
    fake.write_text('#!/bin/sh\nif [ "$1" = -V ]; then echo "Python 3.11.3"; exit 0; fi\nexit 1\n')
    fake.chmod(0o755)
    env = {**os.environ, "PATH": f"{fake_bin}:/usr/bin:/bin"}
    out = subprocess.run(["bash", str(INSTALL), str(tmp_path / "venv")], capture_output=True, text=True, env=env)
    assert out.returncode == 1
    assert out.stderr.splitlines() == ["tbflow setup: ERROR: python3 on PATH is Python 3.11.3; tbflow needs Python >= 3.11.4"]
    assert not (tmp_path / "venv").exists()


def test_setup_minimum_python_is_pyprojects_requires_python():
    pyproject = (ROOT / "pyproject.toml").read_text()
    requires = re.search(r'^requires-python = ">=([0-9.]+)"', pyproject, re.M)
    minimum = re.search(r'^MIN_PYTHON="([0-9.]+)"', INSTALL.read_text(), re.M)
    assert requires and minimum and requires.group(1) == minimum.group(1) == "3.11.4"


@pytest.mark.docker
def test_base_image_builds_on_an_engine_without_it(docker_ready):
    tag = f"tbflow-test/fresh-base:{uuid.uuid4().hex[:12]}"
    env = {**os.environ, "TBFLOW_BASE_IMAGE": tag}
    try:
        out = subprocess.run(["bash", str(ROOT / "scripts/make-base-image.sh"), "--if-missing"], capture_output=True,
                             text=True, env=env, stdin=subprocess.DEVNULL, timeout=600)
        assert out.returncode == 0, out.stderr[-3000:]
        assert "debootstrap done" in out.stderr  # built, not found
        run = subprocess.run(["docker", "run", "--rm", "--network", "none", tag, "python3", "-m", "pytest", "--version"],
                             capture_output=True, text=True, timeout=120)
        assert run.returncode == 0 and "pytest" in run.stdout + run.stderr
    finally:
        subprocess.run(["docker", "image", "rm", "-f", tag], capture_output=True)
