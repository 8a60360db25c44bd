"""``prepare_runner``: a hardened CPython + pinned wheels on this host, ready to bind-mount read-only.

Why tbflow supplies the runner (DESIGN.md §3, "Prevent, don't detect"): the interpreter, pytest
and the wheels that decide a verdict must not come from the container the agent was root in.
This builds them from Debian trixie's packages and PyPI's wheels, both checked by sha256,
hardens them (``harden.py``) and seals them with a manifest whose sha256 is the runner's digest.

Cache: ``<tbflow cache dir>/supplied-runner/builds/<key>``, where the key hashes every input (the
Debian pins, the Python asked for, the wheel specs, the mount point and this package's own
source), so a changed input never reuses an old runner and an unchanged one needs no network.
A build runs in a temporary dir beside it and is renamed into place under a file lock: two jobs
preparing the same runner at once build it once, and nobody sees half a runner.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import platform
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import BaseModel

from tasks_lib.cache_dir import cache_dir
from tasks_lib.container.supplied_runner import assemble, debs, harden, wheels
from tasks_lib.container.supplied_runner.manifest import MANIFEST, verify, write_manifest
from tasks_lib.errors import RunnerUnavailable

log = logging.getLogger(__name__)

MOUNT_AT = "/opt/tbflow/runner"
SUPPORTED_PYTHON = "3.13"
INFO = "RUNNER.json"


class PreparedRunner(BaseModel):
    """A runner on this host: bind-mount ``path`` read-only at ``mount_at``."""

    path: Path
    #: sha256 of the runner's MANIFEST.sha256 (every file's sha256): which bytes ran
    digest: str
    #: the full CPython version, e.g. "3.13.5"
    python: str
    #: ``name==version --hash=sha256:HEX`` per installed distribution, dependencies included
    lock: list[str]
    mount_at: str = MOUNT_AT


def runner_cache() -> Path:
    return cache_dir() / "supplied-runner"


def cache_key(python: str, specs: list[str], mount_at: str = MOUNT_AT) -> str:
    """The hash of every input: the Debian pins, the Python, the specs, the mount, the build code."""
    h = hashlib.sha256()
    for part in (debs.pins_text(), python, "\n".join(specs), mount_at):
        h.update(part.encode() + b"\0")
    for src in sorted(Path(__file__).resolve().parent.glob("*.py")):
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    return h.hexdigest()


def check_request(python: str, specs: list[str]) -> None:
    """Refuse what tbflow cannot supply before anything is downloaded."""
    if platform.machine() not in ("x86_64", "AMD64", "amd64"):
        raise RunnerUnavailable(f"the supplied runner is built for amd64 only, this host is {platform.machine()}")
    if python not in (SUPPORTED_PYTHON, debs.PYTHON_VERSION):
        raise RunnerUnavailable(f"Python {python} was asked for; tbflow supplies only {SUPPORTED_PYTHON} "
                                f"({debs.PYTHON_VERSION}, Debian trixie)")
    for spec in specs:
        if not spec.strip() or spec.lstrip().startswith("-") or any(c in spec for c in "\n\r\0"):
            raise RunnerUnavailable(f"{spec!r} is not a requirement specifier")


def prepare_runner(python: str, wheels: list[str]) -> PreparedRunner:
    """The runner for ``python`` with ``wheels`` (pip specifiers), built once and then reused."""
    check_request(python, wheels)
    key = cache_key(debs.PYTHON_VERSION, wheels)  # "3.13" and "3.13.5" are the same runner
    builds = runner_cache() / "builds"
    target = builds / key
    if (target / INFO).is_file():
        return _load(target)
    builds.mkdir(parents=True, exist_ok=True)
    with _file_lock(runner_cache() / "locks" / f"{key}.lock"):
        if not (target / INFO).is_file():
            for dead in builds.glob(f".{key[:16]}-*"):  # a build of this key killed midway (we hold its lock)
                _remove(dead)
            _build(python, wheels, target)
    return _load(target)


def _build(python: str, specs: list[str], target: Path) -> None:
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name[:16]}-", dir=target.parent))
    try:
        out = tmp / "runner"
        t0 = time.monotonic()
        debs.unpack_debs(runner_cache() / "debs", tmp / "debs")
        t1 = time.monotonic()
        lock = wheels.resolve(SUPPORTED_PYTHON, specs)
        wheels.download(SUPPORTED_PYTHON, lock, runner_cache() / "wheels")
        t2 = time.monotonic()
        assemble.copy_interpreter(tmp / "debs", out)
        wheels.install(SUPPORTED_PYTHON, lock, runner_cache() / "wheels", out / assemble.SITE)
        assemble.copy_closure(tmp / "debs", out)
        full = _check_version(assemble.python_version(out))
        harden.harden_tree(out, MOUNT_AT)
        assemble.write_entry(out)
        assemble.compile_bytecode(out, MOUNT_AT)
        harden.write_venv_cfg(out, MOUNT_AT)
        (out / INFO).write_text(json.dumps({"python": full, "lock": lock, "mount_at": MOUNT_AT}, indent=1) + "\n")
        assemble.seal(out)
        out.chmod(0o755)  # the manifest last, then the top dir sealed too
        digest = write_manifest(out)
        (out / MANIFEST).chmod(0o444)
        os.utime(out / MANIFEST, (0, 0))
        out.chmod(0o555)
        os.utime(out, (0, 0))
        os.rename(out, target)
        log.info("supplied runner %s built: debs %.1f s, wheels %.1f s, build %.1f s (digest %s)", target.name[:12],
                 t1 - t0, t2 - t1, time.monotonic() - t2, digest[:12])
    finally:
        _remove(tmp)


def _check_version(full: str) -> str:
    if full != debs.PYTHON_VERSION:
        raise RunnerUnavailable(f"the packages hold Python {full}, not the pinned {debs.PYTHON_VERSION}")
    return full


#: runners this process has checked against their manifests (path -> digest): a job's trials reuse
#: one runner, and hashing its 63 MB again for each would cost every trial up to a second of CPU
_VERIFIED: dict[str, str] = {}


def _load(target: Path) -> PreparedRunner:
    digest = _VERIFIED.get(str(target)) or verify(target)
    _VERIFIED[str(target)] = digest
    info = json.loads((target / INFO).read_text())
    return PreparedRunner(path=target, digest=digest, python=info["python"], lock=info["lock"],
                          mount_at=info["mount_at"])


@contextmanager
def _file_lock(path: Path) -> Iterator[None]:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _remove(tree: Path) -> None:
    """rmtree of a sealed (read-only) tree."""
    if not tree.exists():
        return
    for dirpath, dirnames, _ in os.walk(tree):
        for d in dirnames:
            p = Path(dirpath) / d
            if not p.is_symlink():
                p.chmod(0o755)
    tree.chmod(0o755)
    shutil.rmtree(tree, ignore_errors=True)
