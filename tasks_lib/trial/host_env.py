"""The container side of a host-side agent: ``exec``, ``upload`` and ``download`` in its trial.

Each ``exec`` is started by tbflow's launcher (``Sandbox.launch``) in a session of its own whose id
is added to the trial's sessions *before* the command can do anything, so the deadline kill and
the kill before the verifier reach it exactly as they reach a CLI's commands. Its stdout and
stderr go to a file in ``/logs/agent/exec/`` (kept with the agent's logs as evidence), read back
through the engine's archive call, at most ``max_output_bytes`` of it. A per-call timeout kills
that call's session inside the container through tbflow's judge.

After the deadline (``stop`` set) no command starts: ``exec`` returns ``timed_out`` at once. A
command tbflow cannot run because the agent broke its container (removed ``/logs``, killed PID 1)
is the agent's result: it comes back as ``ExecOutput.error``, never as an exception, so the stage
ends as it would for a CLI and the later stages judge the container.
"""

from __future__ import annotations

import itertools
import shutil
import tarfile
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, cast

from tasks_lib.container.archives import pack
from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.container.sandbox import Sandbox
from tasks_lib.errors import ContainerError, EnvironmentFailure
from tasks_lib.trial.host_agent_api import ExecOutput

STAGE = "run-agent"
EXEC_DIR = "/logs/agent/exec"
#: what one command's output may bring to the host (the agent bounds what its model sees)
MAX_OUTPUT_BYTES = 1024 * 1024
#: what one ``download`` may bring to the host, as archive bytes: the agent decides how much a path
#: holds (a sparse 1 TiB file streams for hours), so a bigger one raises ``DownloadBoundExceeded``
MAX_DOWNLOAD_BYTES = 256 * 1024 * 1024
#: the longest one ``download`` may take: the time left before the agent's deadline, at least this
#: (a plug-in collecting results right at its deadline), at most ``DOWNLOAD_MAX_SEC``
DOWNLOAD_MIN_SEC = 30.0
DOWNLOAD_MAX_SEC = 300.0
#: the longest ``exec`` waits for the launcher's report (the time left caps it): the agent may have
#: made the output file a FIFO, which blocks the launcher's open after it reported its session
LAUNCH_WAIT_SEC = 30.0


class SandboxEnv:
    """``ContainerEnv`` over one trial's ``Sandbox``; ``sessions`` is shared with run-agent."""

    max_output_bytes = MAX_OUTPUT_BYTES
    max_download_bytes = MAX_DOWNLOAD_BYTES

    def __init__(self, sandbox: Sandbox, deadline: float, stop: threading.Event, sessions: list[int],
                 lock: threading.Lock) -> None:
        self._sandbox = sandbox
        self._deadline = deadline
        self._stop = stop
        self.sessions = sessions
        #: held while a command starts and its session is recorded, and while the deadline kill
        #: takes its list: a command starts either before the kill (and is killed) or not at all
        self._lock = lock
        self._numbers = itertools.count(1)

    def exec(self, cmd: str, timeout: float | None = None, cwd: str | None = None, user: str | None = None,
             env: dict[str, str] | None = None) -> ExecOutput:
        began = time.monotonic()
        left = self._deadline - began
        limit = left if timeout is None else min(float(timeout), left)
        out_path = f"{EXEC_DIR}/{next(self._numbers):05d}.txt"
        try:
            with self._lock:
                if self._stop.is_set() or limit <= 0:
                    return ExecOutput(exit_code=None, output="", timed_out=True)
                # bounded by the time left: this lock also holds off the deadline kill
                exec_id, sid = self._launch(["bash", "-c", cmd], out_path, user, env, cwd, min(limit, LAUNCH_WAIT_SEC))
                self.sessions.append(sid)
            result = self._sandbox.wait(exec_id, limit, STAGE, on_deadline=lambda: self._kill(sid))
            data, size = read_head(self._sandbox, out_path, self.max_output_bytes)
        except EnvironmentFailure as exc:  # the container broke under the agent: its own result
            return ExecOutput(exit_code=None, output="", error=exc.message, duration_sec=time.monotonic() - began)
        return ExecOutput(exit_code=result.exit_code, output=data.decode("utf-8", errors="replace"),
                          timed_out=result.timed_out or self._stop.is_set(), truncated=size > len(data),
                          output_bytes=size, duration_sec=round(time.monotonic() - began, 3))

    def _launch(self, argv: list[str], out_path: str, user: str | None, env: dict[str, str] | None,
                cwd: str | None, wait: float) -> tuple[str, int]:
        try:
            return self._sandbox.launch(argv, out_path, None, STAGE, user=user, env=env, workdir=cwd,
                                        report_timeout=max(1.0, wait))
        except ContainerError:  # the agent may have removed /logs/agent/exec: make it again, once
            self._sandbox.put(pack([], dirs=[("/logs", 0o755), ("/logs/agent", 0o777), (EXEC_DIR, 0o777)]),
                              EXEC_DIR, STAGE)
            return self._sandbox.launch(argv, out_path, None, STAGE, user=user, env=env, workdir=cwd,
                                        report_timeout=max(1.0, wait))

    def _kill(self, sid: int) -> None:
        try:
            self._sandbox.processes(STAGE, [sid])
        except ContainerError:
            pass  # the wait's grace then ends the call; the trial's own kill follows at the deadline

    def upload(self, src: Path, dst: str) -> None:
        src = Path(src)
        if src.is_dir():
            self._sandbox.upload_dirs([(src, dst)], STAGE)
            return
        with tempfile.TemporaryDirectory() as tmp:
            staged = Path(tmp) / "d"
            staged.mkdir()
            shutil.copy2(src, staged / Path(dst).name)
            self._sandbox.upload_dirs([(staged, str(Path(dst).parent))], STAGE)

    def download(self, src: str, dst: Path) -> None:
        dst = Path(dst)
        with tempfile.TemporaryDirectory(dir=dst.parent if dst.parent.is_dir() else None) as tmp:
            left = self._deadline - time.monotonic()
            self._sandbox.download(src, Path(tmp), STAGE, self.max_download_bytes,
                                   min(DOWNLOAD_MAX_SEC, max(DOWNLOAD_MIN_SEC, left)))
            got = Path(tmp) / Path(src).name
            if not got.exists() and not got.is_symlink():
                raise FileNotFoundError(f"{src} does not exist in the container")
            if dst.is_dir() and not dst.is_symlink():
                shutil.rmtree(dst)
            else:
                dst.unlink(missing_ok=True)
            shutil.move(str(got), dst)


def read_head(sandbox: Sandbox, path: str, limit: int) -> tuple[bytes, int]:
    """(the first ``limit`` bytes of the container file ``path``, its whole size), streamed: the
    rest is never read. A file that is gone or not a plain file reads as empty."""
    try:
        stream, _ = get_client().api.get_archive(sandbox.id, path)
    except DOCKER_ERRORS as exc:
        if "No such container" in str(exc) or "is not running" in str(exc):
            raise ContainerError(STAGE, f"could not read {path}: {exc}") from exc
        return b"", 0
    reader = _Chunks(stream)
    try:
        with tarfile.open(fileobj=cast(Any, reader), mode="r|") as tar:
            member = tar.next()
            if member is None or not member.isfile():
                return b"", 0
            fh = tar.extractfile(member)
            return (fh.read(limit) if fh else b""), member.size
    except (tarfile.TarError, OSError) as exc:
        raise EnvironmentFailure(STAGE, f"reading {path} failed: {exc}") from exc
    finally:
        close = getattr(stream, "close", None)
        if close is not None:
            close()


class _Chunks:
    """A read-only file over the archive's chunks, for tarfile's stream mode."""

    def __init__(self, chunks) -> None:
        self._it = iter(chunks)
        self._buf = b""

    def read(self, n: int = -1) -> bytes:
        while n < 0 or len(self._buf) < n:
            try:
                self._buf += next(self._it)
            except StopIteration:
                break
        if n < 0:
            out, self._buf = self._buf, b""
        else:
            out, self._buf = self._buf[:n], self._buf[n:]
        return out
