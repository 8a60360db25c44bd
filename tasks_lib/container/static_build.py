"""Build a static binary from C sources once per source version, on the host.

Why compile on the host: trial images are arbitrary (no compiler, maybe no libc we know), so
tbflow's in-container programs (the judge, the model relay) ship as ``gcc -static`` binaries that
run in any x86_64 Linux image. A binary is cached under
``<cache dir>/<kind>/<sha256 of its sources>/<name>`` (``tasks_lib/cache_dir.py``), so a changed
source gets a new directory and a stale binary is never reused.

Concurrency: every caller compiles into its own temporary file and renames it into place
(``os.replace`` is atomic on one filesystem); two callers may both compile, the last rename wins
and both results are identical, so nobody ever sees a half-written binary.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tasks_lib.cache_dir import cache_dir as tbflow_cache_dir
from tasks_lib.errors import TbflowError

GCC_FLAGS = ["-static", "-O2", "-s", "-Wall", "-Wextra"]
COMPILE_TIMEOUT_SEC = 120
INSTALL_HINT = "install a C compiler and static libc: apt-get install gcc libc6-dev"


class StaticBuildError(TbflowError):
    """A static binary could not be compiled on the host; the message carries gcc's output and the fix.

    Not an ``EnvironmentFailure`` of one trial: it is the host's setup, the same for every trial,
    so callers stop the job with this message rather than retry.
    """


def sources_digest(sources: list[Path]) -> str:
    h = hashlib.sha256()
    for src in sources:
        h.update(src.name.encode() + b"\0" + src.read_bytes() + b"\0")
    return h.hexdigest()


def ensure_static_binary(kind: str, name: str, sources: list[Path], cache_dir: Path | None = None) -> Path:
    """The path of a static ``name`` built from ``sources`` (``.c`` files compiled, headers hashed)."""
    try:
        digest = sources_digest(sources)
    except OSError as exc:
        raise StaticBuildError(f"{name} source is unreadable: {exc} (is it in the installed package data?)") from exc
    root = cache_dir or tbflow_cache_dir() / kind
    target = root / digest / name
    if _usable(target):
        return target
    gcc = shutil.which("gcc")
    if gcc is None:
        raise StaticBuildError(f"gcc not found on PATH; tbflow compiles its in-container {name} once. {INSTALL_HINT}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{digest[:16]}-", suffix=".tmp", dir=root)
        os.close(fd)
    except OSError as exc:
        raise StaticBuildError(f"cannot write the {name} cache {root}: {exc}") from exc
    tmp = Path(tmp_name)
    try:
        _compile(gcc, [s for s in sources if s.suffix == ".c"], tmp, name)
        tmp.chmod(0o755)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _compile(gcc: str, sources: list[Path], out: Path, name: str) -> None:
    cmd = [gcc, *GCC_FLAGS, "-o", str(out), *map(str, sources)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_SEC,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise StaticBuildError(f"compiling {name} took over {COMPILE_TIMEOUT_SEC} s: {' '.join(cmd)}") from exc
    except OSError as exc:
        raise StaticBuildError(f"cannot run {gcc}: {exc}. {INSTALL_HINT}") from exc
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()[-4000:]
        raise StaticBuildError(f"compiling {name} failed ({' '.join(cmd)}, exit {proc.returncode}). "
                               f"{INSTALL_HINT}\ngcc said:\n{output}")


def _usable(path: Path) -> bool:
    """A finished binary: executable ELF (a rename only ever exposes complete files)."""
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"\x7fELF" and os.access(path, os.X_OK)
    except OSError:
        return False
