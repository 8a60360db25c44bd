"""Image builds through BuildKit: ``docker buildx build`` as a child process under a real deadline.

Why a child process: docker-py speaks only the legacy builder's ``/build`` API, which refuses
``RUN --mount``, heredocs and ``COPY --chmod`` (tasks written for Harbor, which builds with
BuildKit, then end invalid: environment). BuildKit's client side is a gRPC session that the
``docker buildx`` plugin implements; nothing in the lock does.

Why the deadline holds: the build lives as long as the CLI's session. Killing the CLI's process
group (the ``docker`` front end and its ``docker-buildx`` plugin child) closes the session and the
daemon cancels the solve, stopping the step that runs. The CLI runs in a session of its own (so
killing its group spares tbflow) and under ``setpriv --pdeathsig KILL``, so a tbflow killed with
``kill -9`` takes the CLI, and with it the build, along instead of leaving an orphan that builds
on. docs/running-jobs.md ("What a trial does", build-image) states the contract;
tests/test_build_timeout_cancels_build_in_daemon.py checks that the step's process is gone.
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

POLL_SEC = 0.2
#: how long the log reader may take to see the end of a killed CLI's output
DRAIN_SEC = 10.0
#: an error line of BuildKit's plain progress: a step's (``#6 ERROR: ...``) or the final one
_ERROR = re.compile(r"^(?:#\d+ )?ERROR: (?:failed to solve: )?(.+)$")
#: the CLI gets SIGKILL when the thread that started it dies (util-linux, essential on Debian)
_DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []


@dataclass(frozen=True)
class BuildRequest:
    """What to build: the context (its ``Dockerfile``), the tag, the image's labels."""

    context: Path
    tag: str
    labels: Mapping[str, str]
    #: ``--network`` of the RUN steps (tests: ``none``); None is the engine's default
    network: str | None = None


@dataclass
class BuildOutcome:
    """``finished`` is False when the build was cut at the deadline or because the job stops."""

    finished: bool
    returncode: int | None
    #: the error lines of the log, in order; the last is the cause (the final ``ERROR:``)
    errors: list[str] = field(default_factory=list)
    #: the built image's id (``--iidfile``); None unless the build succeeded
    image_id: str | None = None


@functools.cache
def buildx_available() -> bool:
    """Whether ``docker buildx`` runs here (checked once per process: a plugin does not appear
    mid-job). Without it images are built by the legacy builder (tasks_lib/trial/images.py)."""
    try:
        return subprocess.run(["docker", "buildx", "version"], capture_output=True, timeout=30,
                              stdin=subprocess.DEVNULL, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


def command(request: BuildRequest, iidfile: Path) -> list[str]:
    """The CLI call: plain progress (a log a person and ``build_failure`` can read), the image
    loaded into the engine tbflow runs containers on."""
    cmd = ["docker", "buildx", "build", "--load", "--progress=plain", "--iidfile", str(iidfile),
           "--tag", request.tag]
    for key, value in request.labels.items():
        cmd += ["--label", f"{key}={value}"]
    if request.network:
        cmd += ["--network", request.network]
    return [*cmd, str(request.context)]


def build(request: BuildRequest, log: IO[str], timeout_sec: float, stopping: Callable[[], bool]) -> BuildOutcome:
    """Run the build, copying its output to ``log`` line by line; kill it at ``timeout_sec`` or as
    soon as ``stopping()`` is true (the job is being interrupted)."""
    with tempfile.TemporaryDirectory(prefix="tbflow-build-") as tmp:
        iidfile = Path(tmp) / "iid"
        cmd = command(request, iidfile)
        log.write(f"$ {shlex.join(cmd)}\n")
        log.flush()
        proc = subprocess.Popen([*_DIE_WITH_PARENT, *cmd], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, errors="replace", start_new_session=True)
        errors: list[str] = []
        reader = threading.Thread(target=_copy, args=(proc, log, errors), name=f"build-log-{request.tag}",
                                  daemon=True)
        reader.start()
        finished = _wait(proc, time.monotonic() + timeout_sec, stopping)
        if not finished:
            _kill_group(proc)
        reader.join(DRAIN_SEC)
        image_id = iidfile.read_text().strip() if finished and proc.returncode == 0 and iidfile.exists() else None
    return BuildOutcome(finished=finished, returncode=proc.returncode, errors=errors, image_id=image_id or None)


def _copy(proc: subprocess.Popen[str], log: IO[str], errors: list[str]) -> None:
    assert proc.stdout is not None
    with proc.stdout:
        for line in proc.stdout:
            log.write(line)
            log.flush()
            m = _ERROR.match(line.rstrip("\n"))
            if m:
                errors.append(m.group(1))


def _wait(proc: subprocess.Popen[str], deadline: float, stopping: Callable[[], bool]) -> bool:
    """True when the CLI exited by itself before ``deadline`` and before the job started stopping."""
    while not stopping():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            proc.wait(min(POLL_SEC, left))
            return True
        except subprocess.TimeoutExpired:
            continue
    return False


def _kill_group(proc: subprocess.Popen[str]) -> None:
    """SIGKILL the CLI and its plugin together: a plugin left alive would keep the session (and
    the build in the daemon) going."""
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()
