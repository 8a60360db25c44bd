"""Build the in-container relay (``tbflow-relay``) once per source version, on the host.

Why compile on the host: trial images are arbitrary (no compiler, maybe no libc we know), so the
relay ships as one ``gcc -static`` binary that runs in any x86_64 Linux image. The binary is cached
under ``~/.cache/tbflow/relay/<sha256 of relay.c>/tbflow-relay`` (``$XDG_CACHE_HOME`` is honoured),
so a changed source gets a new directory and a stale binary is never reused.

Concurrency: every caller compiles into its own temporary file next to the cache directory and
renames it into place (``os.replace`` is atomic on one filesystem). Two trials starting at once
may both compile; the last rename wins and both results are identical, so nobody ever sees a
half-written binary. The ``<sha>/`` directory holds only the finished binary, so it can be
uploaded as a whole.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from tasks_lib.errors import TbflowError

RELAY_SOURCE = Path(__file__).resolve().parent / "relay" / "relay.c"
RELAY_NAME = "tbflow-relay"
#: Where tbflow puts the relay inside a trial container, and where the gateway socket's
#: directory is mounted (read-only). Harness-owned paths under /opt/tbflow (DESIGN §6).
RELAY_CONTAINER_DIR = "/opt/tbflow/relay"
GATEWAY_CONTAINER_DIR = "/opt/tbflow/gateway"
GCC_FLAGS = ["-static", "-O2", "-s", "-Wall", "-Wextra"]
COMPILE_TIMEOUT_SEC = 120
INSTALL_HINT = "install a C compiler and static libc: apt-get install gcc libc6-dev"


class RelayBuildError(TbflowError):
    """The relay could not be compiled on the host. The message carries gcc's output and the fix.

    Not an ``EnvironmentFailure`` of one trial: it is the host's setup, the same for every trial,
    so callers should stop the job with this message rather than retry.
    """


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "tbflow" / "relay"


def source_digest(source: Path = RELAY_SOURCE) -> str:
    return hashlib.sha256(source.read_bytes()).hexdigest()


def ensure_relay_binary(cache_dir: Path | None = None, source: Path = RELAY_SOURCE) -> Path:
    """Return the path of a static ``tbflow-relay`` built from ``source``, compiling it if needed."""
    try:
        digest = source_digest(source)
    except OSError as exc:
        raise RelayBuildError(f"relay source {source} is unreadable: {exc} "
                              "(is tasks_lib/gateway/relay/*.c in the installed package data?)") from exc
    root = cache_dir or cache_root()
    target = root / digest / RELAY_NAME
    if _usable(target):
        return target
    gcc = shutil.which("gcc")
    if gcc is None:
        raise RelayBuildError(f"gcc not found on PATH; tbflow compiles its in-container relay once. {INSTALL_HINT}")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp_name = tempfile.mkstemp(prefix=f".{digest[:16]}-", suffix=".tmp", dir=root)
        os.close(fd)
    except OSError as exc:
        raise RelayBuildError(f"cannot write the relay cache {root}: {exc}") from exc
    tmp = Path(tmp_name)
    try:
        _compile(gcc, source, tmp)
        tmp.chmod(0o755)
        os.replace(tmp, target)
    finally:
        tmp.unlink(missing_ok=True)
    return target


def _compile(gcc: str, source: Path, out: Path) -> None:
    cmd = [gcc, *GCC_FLAGS, "-o", str(out), str(source)]
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_SEC,
                              stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired as exc:
        raise RelayBuildError(f"compiling the relay took over {COMPILE_TIMEOUT_SEC} s: {' '.join(cmd)}") from exc
    except OSError as exc:
        raise RelayBuildError(f"cannot run {gcc}: {exc}. {INSTALL_HINT}") from exc
    if proc.returncode != 0:
        output = (proc.stdout + proc.stderr).strip()[-4000:]
        raise RelayBuildError(f"compiling the relay failed ({' '.join(cmd)}, exit {proc.returncode}). "
                              f"{INSTALL_HINT}\ngcc said:\n{output}")


def _usable(path: Path) -> bool:
    """A finished binary: executable ELF (a rename only ever exposes complete files)."""
    try:
        with path.open("rb") as fh:
            return fh.read(4) == b"\x7fELF" and os.access(path, os.X_OK)
    except OSError:
        return False
