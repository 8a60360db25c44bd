"""The judge's tools volume: what tbflow runs inside a trial container, out of the agent's reach.

Every trial container mounts, read-only, a volume that tbflow filled before the container
started (``Sandbox.start``): the static ``tbflow-judge`` (setuid root, execute-only, so started as
``JUDGE_USER`` it is root and non-dumpable from its first instruction: judge/judge.h),
``tbflow-launch`` (the same program, not setuid: starts the agent's command as the agent's user)
and a static ``bash`` (Debian's ``bash-static``) that runs ``tests/test.sh``, so neither the
image's shell nor anything on its PATH stands between tbflow and the reward. Nothing of it can
be changed from inside: the volume is mounted read-only and no container process has
``CAP_SYS_ADMIN`` to remount it.
"""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import tempfile
from pathlib import Path

from tasks_lib.cache_dir import cache_dir
from tasks_lib.container.static_build import ensure_static_binary, sources_digest

SOURCES_DIR = Path(__file__).resolve().parent
#: where the tools volume is mounted in every trial container
TOOLS_DIR = "/opt/tbflow/judge"
JUDGE = f"{TOOLS_DIR}/tbflow-judge"
LAUNCH = f"{TOOLS_DIR}/tbflow-launch"
TOOLS_BASH = f"{TOOLS_DIR}/bash"
#: the uid the judge is started as (judge.h JUDGE_UID); the setuid bit makes it root
JUDGE_USER = "4242424:4242424"
#: a static bash on the host (Debian package bash-static); without it test.sh runs with the image's
#: /bin/bash, found by absolute path, never through PATH
HOST_BASH_STATIC = Path(os.environ.get("TBFLOW_BASH_STATIC", "/bin/bash-static"))
IMAGE_BASH = "/bin/bash"


def judge_sources() -> list[Path]:
    return sorted(p for p in SOURCES_DIR.iterdir() if p.suffix in (".c", ".h"))


def judge_binary() -> Path:
    return ensure_static_binary("judge", "tbflow-judge", judge_sources())


def test_bash() -> str:
    """The bash test.sh runs with inside the container."""
    return TOOLS_BASH if HOST_BASH_STATIC.is_file() else IMAGE_BASH


def tools_tar() -> Path:
    """A tar of the tools volume's contents, built once per judge source and bash version."""
    binary = judge_binary()
    bash = HOST_BASH_STATIC.read_bytes() if HOST_BASH_STATIC.is_file() else None
    key = hashlib.sha256((sources_digest(judge_sources()) + hashlib.sha256(bash or b"").hexdigest()).encode())
    target = cache_dir() / "judge" / f"tools-{key.hexdigest()[:24]}.tar"
    if target.is_file():
        return target
    data = binary.read_bytes()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as tf:
        top = tarfile.TarInfo(TOOLS_DIR.lstrip("/"))
        top.type, top.mode = tarfile.DIRTYPE, 0o755
        tf.addfile(top)
        for name, mode, body in (("tbflow-judge", 0o4111, data), ("tbflow-launch", 0o555, data),
                                 ("bash", 0o555, bash)):
            if body is None:
                continue
            info = tarfile.TarInfo(f"{TOOLS_DIR.lstrip('/')}/{name}")
            info.size, info.mode, info.uid, info.gid = len(body), mode, 0, 0
            tf.addfile(info, io.BytesIO(body))
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".tools-", suffix=".tmp", dir=target.parent)  # one per caller, threads too
    with os.fdopen(fd, "wb") as fh:
        fh.write(buf.getvalue())
    os.replace(tmp, target)
    return target
