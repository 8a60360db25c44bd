"""The judge's ground as read-only bind mounts from this host, when the engine runs here.

Each trial container needs the tools (``judge_tools``) at ``/opt/tbflow/judge`` and, right before
the verifier, the task's tests at ``/tests``, both out of the agent's reach. With a remote engine
(``DOCKER_HOST`` over TCP or SSH) they live in two volumes of a *filler* container per trial,
filled through the engine (``Sandbox``). With the engine on this host and tbflow as root, one
host directory holds the tools for every trial (extracted once per judge build) and each trial
gets an empty host directory for its tests, filled by copying right before the verifier; both
are bind-mounted read-only. That saves, per trial, a second container, two volumes and the
tools' upload (issue 28), and the guarantee is the same: no process in the container can write
a read-only mount or remount it (no ``CAP_SYS_ADMIN``).

Root matters: the judge is setuid root, which a bind mount honours only when the host file is
owned by root on a file system mounted without ``nosuid`` (and ``noexec``: a bind keeps the
source's flags); otherwise the filler volumes are used.
"""

from __future__ import annotations

import io
import os
import shutil
import tarfile
import tempfile
from functools import lru_cache
from pathlib import Path

from docker.types import Mount

from tasks_lib.cache_dir import cache_dir
from tasks_lib.container.archives import pack
from tasks_lib.container.judge.judge_tools import TOOLS_DIR, tools_tar

TESTS_DIR = "/tests"
#: where tbflow's supplied verifier runner is mounted (tasks_lib/trial/runner_plan.py MOUNT)
RUNNER_DIR = "/opt/tbflow/runner"


def engine_is_local() -> bool:
    host = os.environ.get("DOCKER_HOST", "")
    return not host or host.startswith("unix://")


@lru_cache(maxsize=8)
def _tools_host_dir(tar_path: str) -> Path | None:
    """The tools extracted once under tbflow's cache (atomically: a temp dir renamed into place)."""
    target = Path(tar_path).with_suffix("")
    judge_dir = target / TOOLS_DIR.lstrip("/")
    if not judge_dir.is_dir():
        tmp = Path(tempfile.mkdtemp(prefix=".tools-", dir=target.parent))
        with tarfile.open(tar_path) as tf:
            tf.extractall(tmp, filter="fully_trusted")  # tbflow's own tar: setuid kept, owner root
        try:
            os.rename(tmp, target)
        except OSError:  # another process put it there first
            shutil.rmtree(tmp, ignore_errors=True)
    if os.statvfs(judge_dir).f_flag & (os.ST_NOSUID | os.ST_NOEXEC):  # a bind keeps the source's flags
        return None
    return judge_dir


def binds_possible() -> bool:
    """Whether the trial's container can bind host directories read-only (the engine is here and
    tbflow is root); otherwise the filler's volumes carry the tools and the tests."""
    return engine_is_local() and os.geteuid() == 0


def local_mounts(container: str, runner_dir: str | None = None) -> list[Mount] | None:
    """Read-only binds of the tools, of the trial's (empty) tests dir and of the supplied verifier
    runner (``runner_dir``, when the trial uses it), or None where the engine or this process
    cannot use them (then the filler volumes are used)."""
    if not binds_possible():
        return None
    tools = _tools_host_dir(str(tools_tar()))
    if tools is None:
        return None
    tests = tests_host_dir(container)
    shutil.rmtree(tests, ignore_errors=True)
    tests.mkdir(parents=True, mode=0o755)
    mounts = [Mount(TOOLS_DIR, str(tools), type="bind", read_only=True),
              Mount(TESTS_DIR, str(tests), type="bind", read_only=True)]
    if runner_dir is not None:
        mounts.append(Mount(RUNNER_DIR, runner_dir, type="bind", read_only=True))
    return mounts


def tests_host_dir(container: str) -> Path:
    return cache_dir() / "run" / container / "tests"


def fill_host_tests(container: str, tests_dir: Path) -> bool:
    """Copy the task's tests into the trial's bind-mounted tests dir, exactly as the filler's
    archive would put them (CRLF made LF in scripts); False when the trial has no such dir."""
    target = tests_host_dir(container)
    if not target.is_dir():
        return False
    with tarfile.open(fileobj=io.BytesIO(pack([(tests_dir, TESTS_DIR)], normalise_crlf=True))) as tf:
        tf.extractall(target.parent, filter="data")
    return True


def remove_host_tests(container: str) -> bool:
    """Remove the trial's tests dir; False when it had none (its /tests is a filler's volume)."""
    run_dir = tests_host_dir(container).parent
    if not run_dir.is_dir():
        return False
    shutil.rmtree(run_dir, ignore_errors=True)
    return True
