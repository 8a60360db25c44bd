"""The runner's wheels: resolved on PyPI for the runner's Python, locked by sha256, installed offline.

Why pip from tbflow's own venv (no uv): pip resolves for another interpreter and platform
(``--python-version 3.13 --platform manylinux_2_28_x86_64 --abi cp313 --only-binary=:all:``)
without running it, reports what it chose with the index's sha256 (``install --dry-run
--report``), downloads exactly those files checking each hash (``download --require-hashes``) and
unpacks them into a directory (``install --target --no-index --no-deps``). Only binary wheels: no
source distribution's build code ever runs on the host, and a package without a cp313
manylinux or pure-Python wheel is refused by name. The lock (``name==version --hash=sha256:...``
per distribution, dependencies included) is recorded in the runner and returned to the caller.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from tasks_lib.errors import RunnerUnavailable

DEFAULT_INDEX = "https://pypi.org/simple"
PIP_TIMEOUT_SEC = 600
#: the newest manylinux the runner accepts; its glibc (2.41) runs every one up to it
MANYLINUX_MAX = 28
#: pip does not widen an explicit ``--platform manylinux_2_28`` to older tags (only the legacy
#: aliases), so every tag is named: a wheel built only for manylinux2014 (= 2_17) is fine too
PLATFORMS = [f"manylinux_2_{minor}_x86_64" for minor in range(MANYLINUX_MAX, 4, -1)] + [
    "manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64"]


def index_url() -> str:
    return os.environ.get("TBFLOW_PYPI_INDEX", DEFAULT_INDEX)


def target_flags(python: str) -> list[str]:
    """pip's flags that make it choose wheels for the runner, not for the Python running pip."""
    abi = "cp" + python.replace(".", "")
    platforms = [flag for platform in PLATFORMS for flag in ("--platform", platform)]
    return ["--only-binary=:all:", *platforms, "--python-version", python,
            "--implementation", "cp", "--abi", abi, "--abi", "abi3", "--abi", "none"]


def resolve(python: str, specs: list[str]) -> list[str]:
    """The lock: one ``name==version --hash=sha256:HEX`` line per distribution, sorted."""
    with tempfile.TemporaryDirectory(prefix="tbflow-wheels-") as tmp:
        report = Path(tmp) / "report.json"
        _pip(["install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
              "--index-url", index_url(), *target_flags(python), "--", *specs], f"resolving {specs}", python)
        data = json.loads(report.read_text())
    lock = []
    for item in data.get("install", []):
        meta, info = item["metadata"], item["download_info"]
        sha = (info.get("archive_info") or {}).get("hashes", {}).get("sha256")
        if not sha or not info.get("url", "").endswith(".whl"):
            raise RunnerUnavailable(f"{meta['name']} {meta['version']}: the index gave no wheel with a sha256")
        lock.append(f"{_canonical(meta['name'])}=={meta['version']} --hash=sha256:{sha}")
    return sorted(lock)


def download(python: str, lock: list[str], wheel_cache: Path) -> None:
    """Every locked wheel into ``wheel_cache`` (kept there; a file already present is re-checked)."""
    wheel_cache.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="tbflow-wheels-") as tmp:
        req = Path(tmp) / "lock.txt"
        req.write_text("\n".join(lock) + "\n")
        _pip(["download", "--quiet", "--no-deps", "--require-hashes", "--index-url", index_url(),
              *target_flags(python), "-d", str(wheel_cache), "-r", str(req)], "downloading the locked wheels", python)


def install(python: str, lock: list[str], wheel_cache: Path, site: Path) -> None:
    """The locked wheels unpacked into ``site`` with no network and no bytecode (compiled later)."""
    with tempfile.TemporaryDirectory(prefix="tbflow-wheels-") as tmp:
        req = Path(tmp) / "lock.txt"
        req.write_text("\n".join(lock) + "\n")
        _pip(["install", "--quiet", "--no-deps", "--no-index", "--find-links", str(wheel_cache),
              "--require-hashes", "--no-compile", "--target", str(site), *target_flags(python),
              "-r", str(req)], "installing the locked wheels", python)
    # console scripts carry the host's shebang; the runner is always started by path
    shutil.rmtree(site / "bin", ignore_errors=True)
    # pip records the wheel's path on this host (PEP 610): the runner's bytes must not depend on it
    for record in site.glob("*.dist-info/direct_url.json"):
        record.unlink()


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _pip(args: list[str], what: str, python: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env.update(PIP_CONFIG_FILE=os.devnull, PIP_DISABLE_PIP_VERSION_CHECK="1", PIP_NO_INPUT="1")
    cmd = [sys.executable, "-m", "pip", *args[:1], "--isolated", "--timeout", "30", "--retries", "2", *args[1:]]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=PIP_TIMEOUT_SEC,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise RunnerUnavailable(f"{what}: pip did not finish: {exc}") from exc
    if proc.returncode == 0:
        return
    said = (proc.stderr or proc.stdout).strip()
    # network first: pip then also says "No matching distribution" (it saw no versions at all)
    if any(s in said for s in ("Failed to establish", "Max retries exceeded", "Temporary failure in name",
                               "Could not fetch URL", "Network is unreachable", "timed out")):
        why = f"the index {index_url()} cannot be reached (TBFLOW_PYPI_INDEX names another)"
    elif "No matching distribution" in said or "Could not find a version" in said:
        why = f"no cp{python.replace('.', '')} manylinux or pure-Python wheel satisfies it on {index_url()}"
    else:
        why = f"pip exit {proc.returncode}"
    raise RunnerUnavailable(f"{what}: {why}; pip said: {said[-1500:]}")
