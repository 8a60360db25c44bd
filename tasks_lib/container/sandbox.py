"""One trial container and the operations the stages perform on it.

The container's main process is ``sleep infinity`` under Docker's init (``init=True``), so a stop
or removal is immediate (a bare ``sleep`` as PID 1 ignores SIGTERM and costs Docker's 10 s stop
timeout per trial) and orphaned processes are reaped. The image's USER, HOME, PATH, ENV and
WORKDIR are left as they are; ``[environment] env`` and ``workdir`` are applied on top.

Long commands (agent, verifier) run as execs that tbflow polls: the stage ends when the
command's main process exits, even if a background job it started still holds an output pipe,
and the deadline is enforced by tbflow, not by the exec client.

The judge's ground: the tools (``judge_tools``: the static judge, launcher and bash) and ``/tests``,
which stays empty while the agent runs and is filled by tbflow from outside right before the
verifier, are mounted read-only. With the engine on this host they are bind mounts of host
directories (``judge_mounts``: one tools dir for every trial, one tests dir per trial); with a
remote engine each trial container comes with a *filler* container (never started) that owns
two volumes, mounted through ``volumes_from`` and filled through the engine. No process in the
trial container can write either, so nothing tbflow runs or the tests it runs can have been
planted or changed by the agent.
"""

from __future__ import annotations

import logging
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from docker.errors import APIError

from tasks_lib.container import archive_fetch
from tasks_lib.container.archive_fetch import retry_transient as _retry_transient
from tasks_lib.container.archives import pack
from docker.types import Mount

from tasks_lib.container.judge import judge_exec
from tasks_lib.container.docker_client import DOCKER_ERRORS, LABEL_JOB, LABEL_ROOT, LABEL_TRIAL, get_client
from tasks_lib.container.engine_events import ENGINE_EVENTS
from tasks_lib.container.container_removal import (FILLER_SUFFIX, LABEL_ROLE, container_name, remove_container,
                                                   remove_trial)
from tasks_lib.container.judge.judge_mounts import fill_host_tests, local_mounts
from tasks_lib.container.judge.judge_tools import LAUNCH, TOOLS_DIR, tools_tar
from tasks_lib.errors import ContainerError, TransferError
from tasks_lib.container.log_download import extract_logs
from tasks_lib.container.trial_limits import LOG_CONFIG, engine_quota_possible, host_limits, quota_refused
from tasks_lib.container.container_outcomes import LogsOutcome, ProcessInfo
from tasks_lib import interrupts
_log = logging.getLogger(__name__)

POLL_START_SEC = 0.02
POLL_MAX_SEC = 0.25
#: the longest pause between two looks at an exec when the engine's events report its end (a
#: stop request is seen at the next look)
EVENT_POLL_MAX_SEC = 1.0
TESTS_DIR = "/tests"
#: the longest a download of /logs may take (its size is the agent's doing)
LOG_DOWNLOAD_SEC = 300.0
#: what the agent's command needs to start: the launcher's report comes within this
LAUNCH_TIMEOUT_SEC = 60.0


@dataclass
class ExecResult:
    exit_code: int | None
    timed_out: bool
    duration_sec: float


def extra_host_config() -> dict:
    """Host-config additions for every trial container: none. A seam for tests that inject a
    fault, e.g. a small tmpfs for an agent to fill without touching the host's disk."""
    return {}


class ContainerEnvironment(Protocol):
    """What the trial container is started with: a task's ``[environment]`` (its
    ``EnvironmentConfig`` fits), named here so the container layer needs no task model."""

    @property
    def allow_internet(self) -> bool: ...
    @property
    def cpus(self) -> float | None: ...
    @property
    def memory_mb(self) -> int | None: ...
    @property
    def storage_mb(self) -> int | None: ...
    @property
    def workdir(self) -> str | None: ...
    @property
    def env(self) -> dict[str, str]: ...


class Sandbox:
    """A running trial container. Use ``Sandbox.start`` and always ``remove`` (it is idempotent)."""

    def __init__(self, container_id: str, name: str) -> None:
        self.id = container_id
        self.name = name

    @classmethod
    def attach(cls, job_id: str, trial_id: str) -> "Sandbox":
        """The running container of a trial, addressed by its deterministic name."""
        name = container_name(job_id, trial_id)
        return cls(name, name)

    @classmethod
    def start(cls, image: str, env: ContainerEnvironment, job_id: str, trial_id: str,
              mounts: dict[str, str] | None = None, labels: dict[str, str] | None = None,
              runner_dir: str | None = None) -> "Sandbox":
        """Start the trial container. ``mounts`` (host dir → container dir, read-only) is used
        only for the model gateway's socket, so it needs an engine on this host."""
        api = get_client().api
        ENGINE_EVENTS.watch()  # whose doing a stop is, from tbflow's own record (engine_events)
        name = container_name(job_id, trial_id)
        host: dict = dict(init=True, **host_limits(env.storage_mb, engine_quota_possible()))  # trial_limits
        if not env.allow_internet:
            host["network_mode"] = "none"
        if env.cpus:
            host["nano_cpus"] = int(env.cpus * 1e9)
        if mounts:
            host["binds"] = {h: {"bind": t, "mode": "ro"} for h, t in mounts.items()}
        if env.memory_mb:
            host["mem_limit"] = f"{env.memory_mb}m"
            host["memswap_limit"] = f"{env.memory_mb}m"
        host.update(extra_host_config())

        all_labels = {**(labels or {}), LABEL_ROOT: "1", LABEL_JOB: job_id, LABEL_TRIAL: trial_id}

        local = local_mounts(name, runner_dir)  # tools, /tests, the runner: read-only binds where the engine runs here

        def create() -> str:
            if local is not None:
                host["mounts"] = local
            else:
                filler = api.create_container(
                    image, ["true"], name=name + FILLER_SUFFIX, labels={**all_labels, LABEL_ROLE: "filler"},
                    host_config=api.create_host_config(log_config=LOG_CONFIG, mounts=[
                        Mount(TOOLS_DIR, None, type="volume", no_copy=True),
                        Mount(TESTS_DIR, None, type="volume", no_copy=True)]))["Id"]
                host["volumes_from"] = [f"{filler}:ro"]
            return api.create_container(
                image, ["sleep", "infinity"], name=name, working_dir=env.workdir or None, labels=all_labels,
                environment=dict(env.env) or None, host_config=api.create_host_config(**host))["Id"]

        try:
            try:
                container_id = create()
            except APIError as exc:
                dropped = quota_refused(exc) and host.pop("storage_opt", None)  # storage_watch bounds it then
                if exc.status_code != 409 and not dropped:  # 409: a leftover of an earlier try holds the name
                    raise
                remove_container(name)
                remove_container(name + FILLER_SUFFIX)
                container_id = create()
            if local is None:
                with open(tools_tar(), "rb") as fh:
                    if not api.put_archive(name + FILLER_SUFFIX, "/", fh):
                        raise ContainerError("run-agent", "the engine refused tbflow's tools volume")
            api.start(container_id)
        except DOCKER_ERRORS as exc:
            raise ContainerError("run-agent", f"container failed to start from {image}: {exc}") from exc
        return cls(container_id, name)

    # -- files -------------------------------------------------------------------------------

    def put(self, data, what: str, stage: str) -> None:
        """Extract a tar (bytes, or a seekable file streamed from disk) at ``/`` in the container."""
        self.put_into(self.id, data, what, stage)

    def put_into(self, container: str, data, what: str, stage: str) -> None:

        def attempt() -> bool:
            if hasattr(data, "seek"):
                data.seek(0)  # a retried upload must send the file from its start again
            return get_client().api.put_archive(container, "/", data)

        try:
            ok = _retry_transient(attempt)()
        except DOCKER_ERRORS as exc:
            raise TransferError(stage, f"upload of {what} failed: {exc}") from exc
        if not ok:
            raise TransferError(stage, f"upload of {what} was refused by the engine")

    def upload_dirs(self, entries: list[tuple[Path, str]], stage: str, dirs=(), normalise_crlf=False) -> None:
        """Upload host directories (small ones: packed in memory)."""
        self.put(pack(entries, dirs=dirs, normalise_crlf=normalise_crlf),
                 ", ".join(t for _, t in entries) or "directories", stage)

    def upload_tar(self, tar_path: Path, what: str, stage: str) -> None:
        """Upload a prepared tar file, streamed from disk."""
        with open(tar_path, "rb") as fh:
            self.put(fh, what, stage)

    def download(self, path: str, dest: Path, stage: str, max_bytes: int, timeout_sec: float) -> list[str]:
        """Copy container ``path`` into ``dest/<basename>`` after checking it all, at most
        ``max_bytes`` of archive within ``timeout_sec`` (``archive_fetch``)."""
        return archive_fetch.download(self.id, path, dest, stage, max_bytes, timeout_sec)

    def download_logs(self, path: str, dest: Path, stage: str, keep: tuple[str, ...],
                      max_file_bytes: int) -> LogsOutcome:
        """Copy ``path/<k>`` for ``k`` in ``keep`` into ``dest/<k>``, streamed: unsafe entries
        skipped and listed, every file cut at ``max_file_bytes`` (see ``log_download``), the whole
        cut at ``LOG_DOWNLOAD_SEC`` (``archive_fetch``: the agent decides how much ``/logs`` holds)."""
        got = archive_fetch.fetch_archive(self.id, path, stage, lambda chunks: extract_logs(
            chunks, dest, Path(path).name, keep, max_file_bytes), LOG_DOWNLOAD_SEC)
        return got if got is not None else LogsOutcome(max_file_bytes=max_file_bytes)

    # -- commands ----------------------------------------------------------------------------

    def run_tool(self, argv: list[str], stage: str, *, user: str = "root", timeout: float = 30,
                 workdir: str = "/") -> tuple[int | None, str]:
        """A short command under a host-side deadline (absolute path, no shell of its own):
        (Docker's exit code, or None at the deadline; stdout+stderr)."""
        run = judge_exec.run_tool(self.id, argv, stage, timeout, user=user, workdir=workdir)
        return run.exit_code, (run.stdout + run.stderr).decode("utf-8", errors="backslashreplace")

    def judge(self, args: list[str], stage: str, deadline_sec: float,
              env: dict[str, str] | None = None) -> judge_exec.ToolRun:
        """Run ``tbflow-judge ARGS`` (judge/judge.h); its report arrives on the exec's own stream."""
        return judge_exec.run_judge(self.id, args, stage, deadline_sec, env=env)

    def launch(self, argv: list[str], stdout_path: str, stderr_path: str | None, stage: str, *,
               user: str | None, env: dict[str, str] | None = None, workdir: str | None = None,
               report_timeout: float = LAUNCH_TIMEOUT_SEC) -> tuple[str, int]:
        """Start ``argv`` through ``tbflow-launch`` (stdin an empty pipe, output to the given files)
        in a session of its own; return (exec id, session id). The session id comes on the exec's
        own stream, never through a file the agent could write. ``report_timeout`` bounds the wait
        for the launcher's whole report: a launcher stuck opening an output file the agent made a
        FIFO still reported its session first, so it is tracked, and killed with the session."""
        exec_id, reader = judge_exec.start(self.id, [LAUNCH, "launch", stdout_path, stderr_path or "", "--", *argv],
                                           stage, user=user or "", env=env, workdir=workdir or "", ack_end=True)
        channel = judge_exec.read_launch(reader, report_timeout)
        sid = channel.first("launch")
        if sid is None or not sid.isdigit():
            why = b"; ".join(channel.all("fail")).decode("utf-8", "backslashreplace") or channel.problem
            raise ContainerError(stage, f"tbflow-launch did not start {argv[0]}: {why}")
        return exec_id, int(sid)

    def inspect(self, stage: str) -> dict:
        """The container as the engine holds it: ``Config`` (``Env``: image ENV plus ``[environment]
        env``; ``WorkingDir``: the task's ``workdir`` or the image's WORKDIR), ``State``, and
        ``GraphDriver`` (the writable layer's directories)."""
        try:
            return get_client().api.inspect_container(self.id)
        except DOCKER_ERRORS as exc:
            raise ContainerError(stage, f"could not inspect the container: {exc}") from exc

    def wait(self, exec_id: str, timeout: float, stage: str, on_deadline) -> ExecResult:
        """Poll an exec until its main process exits or ``timeout`` passes.

        At the deadline ``on_deadline()`` must stop the command's processes; we then wait for
        the exec to report its exit. An exec counts as ended only with an exit code (right after
        its start Docker may show it as not running yet). Raises ``Interrupted`` when the job is
        being stopped.
        """
        api = get_client().api
        start = time.monotonic()
        deadline = start + timeout
        delay = POLL_START_SEC
        timed_out = False
        with ENGINE_EVENTS.exec_end(exec_id) as ended:  # woken by the engine's exec_die (engine_events)
            longest = EVENT_POLL_MAX_SEC if ended.live else POLL_MAX_SEC
            if ended.live:  # a command just started runs: the first look waits for its end or a pause
                ended.pause(delay)
            while True:
                if (code := ended.exit_code()) is not None:  # the engine's exec_die said it (ExecEnd)
                    return ExecResult(code, timed_out, time.monotonic() - start)
                try:
                    info = _retry_transient(api.exec_inspect)(exec_id)
                except DOCKER_ERRORS as exc:
                    raise ContainerError(stage, f"lost track of the command: {exc}") from exc
                if not info.get("Running") and info.get("ExitCode") is not None:
                    return ExecResult(info.get("ExitCode"), timed_out, time.monotonic() - start)
                interrupts.check()
                now = time.monotonic()
                if not timed_out and now >= deadline:
                    timed_out = True
                    on_deadline()
                    deadline = now + 15  # grace for the exec to notice its process died
                elif timed_out and now >= deadline:
                    return ExecResult(None, True, time.monotonic() - start)
                ended.pause(min(delay, max(0.0, deadline - now)))
                delay = min(delay * 1.5, longest)

    def processes(self, stage: str, kill_sids: list[int] | None = None,
                  deadline_sec: float = 60) -> tuple[list[ProcessInfo], list[ProcessInfo]]:
        """(killed, left running). With ``kill_sids`` those sessions and their descendants are killed.

        Raises ``ContainerError`` when the judge gives no whole report (the caller decides whose
        doing that was)."""
        run = self.judge(["kill", *map(str, kill_sids)] if kill_sids else ["procs"], stage, deadline_sec)
        if not run.complete:
            why = run.channel.problem or ("no report within the deadline" if run.timed_out else f"exit {run.exit_code}")
            raise ContainerError(stage, f"tbflow's process tool gave no whole report: {why}")
        return parse_processes(run.channel.all("killed")), parse_processes(run.channel.all("left"))

    def fill_tests(self, tests_dir: Path, stage: str) -> None:
        """Put the task's tests into the read-only ``/tests`` (a host dir bind-mounted read-only,
        or through the filler: the trial container itself cannot write there, which is the point)."""
        try:
            if fill_host_tests(self.name, tests_dir):
                return
        except (OSError, tarfile.TarError) as exc:
            raise TransferError(stage, f"the tests could not be put into /tests: {exc}") from exc
        self.put_into(self.name + FILLER_SUFFIX, pack([(tests_dir, TESTS_DIR)], normalise_crlf=True), "the tests", stage)

    def remove(self) -> None:
        remove_trial(self.name)


def parse_processes(records: list[bytes]) -> list[ProcessInfo]:
    """Process records ``PID SID PPID STATE COMMAND`` (judge/procs.c); the command as text, its
    odd bytes escaped, so a record can always be written."""
    out: list[ProcessInfo] = []
    for rec in records:
        parts = rec.split(b" ", 4)
        if len(parts) < 4 or not (parts[0].isdigit() and parts[1].isdigit()):
            continue
        command = parts[4].decode("utf-8", errors="backslashreplace") if len(parts) > 4 else ""
        out.append(ProcessInfo(pid=int(parts[0]), sid=int(parts[1]), command=command.strip()))
    return out


def run_dir_layout() -> list[tuple[str, int]]:
    """Directories every trial container gets before the agent starts."""
    return [("/logs", 0o755), ("/logs/agent", 0o777), ("/logs/verifier", 0o777), ("/opt/tbflow", 0o755)]
