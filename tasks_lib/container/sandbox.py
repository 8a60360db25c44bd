"""One trial container and the operations the stages perform on it.

The container's main process is ``sleep infinity`` under Docker's init (``init=True``), so a stop
or removal is immediate (a bare ``sleep`` as PID 1 ignores SIGTERM and costs Docker's 10 s stop
timeout per trial) and orphaned processes are reaped. The image's USER, HOME, PATH, ENV and
WORKDIR are left as they are; ``[environment] env`` and ``workdir`` are applied on top.

Long commands (agent, verifier) run as *detached* execs that tbflow polls: the stage ends when
the command's main process exits, even if a background job it started still holds an output
pipe, and the deadline is enforced by tbflow, not by the exec client.
"""

from __future__ import annotations

import logging
import re
import tarfile
import time
from dataclasses import dataclass
from pathlib import Path

import requests
from docker.errors import APIError, NotFound
from tenacity import retry, retry_if_exception, stop_after_attempt, wait_exponential

from tasks_lib.container.archives import extract_checked, pack
from tasks_lib.container.container_scripts import AGENT_WRAPPER, PROCESS_TOOL, RUN_DIR
from tasks_lib.container.docker_client import DOCKER_ERRORS, LABEL_JOB, LABEL_ROOT, LABEL_TRIAL, get_client
from tasks_lib.errors import ContainerError, TransferError, disk_full
from tasks_lib.container.exec_capture import ExecCapture
from tasks_lib.container.log_download import extract_logs
from tasks_lib.job.records import LogsOutcome, ProcessInfo
from tasks_lib.job.task_model import Task
from tasks_lib.trial import interrupts

_log = logging.getLogger(__name__)

POLL_START_SEC = 0.02
POLL_MAX_SEC = 0.25


def _transient(exc: BaseException) -> bool:
    """Docker API hiccups worth retrying for idempotent calls (5xx, dropped connections)."""
    if isinstance(exc, requests.exceptions.ConnectionError):
        return True
    return isinstance(exc, APIError) and exc.status_code is not None and exc.status_code >= 500 \
        and not isinstance(exc, NotFound)


_retry_transient = retry(retry=retry_if_exception(_transient), stop=stop_after_attempt(4),
                         wait=wait_exponential(multiplier=0.2, max=3), reraise=True)


@dataclass
class ExecResult:
    exit_code: int | None
    timed_out: bool
    duration_sec: float


def extra_host_config() -> dict:
    """Host-config additions for every trial container: none. A seam for tests that inject a
    fault, e.g. a small tmpfs for an agent to fill without touching the host's disk."""
    return {}


def container_name(job_id: str, trial_id: str) -> str:
    return "tbflow-" + re.sub(r"[^a-zA-Z0-9_.-]", "-", f"{job_id[:12]}-{trial_id}")[:200]


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
    def start(cls, image: str, task: Task, job_id: str, trial_id: str,
              mounts: dict[str, str] | None = None, labels: dict[str, str] | None = None) -> "Sandbox":
        """Start the trial container. ``mounts`` (host dir → container dir, read-only) is used
        only for the model gateway's socket, so it needs an engine on this host."""
        env = task.config.environment
        api = get_client().api
        name = container_name(job_id, trial_id)
        host: dict = dict(init=True)
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

        def create() -> str:
            return api.create_container(
                image, ["sleep", "infinity"], name=name, working_dir=env.workdir or None,
                labels={**(labels or {}), LABEL_ROOT: "1", LABEL_JOB: job_id, LABEL_TRIAL: trial_id},
                environment=dict(env.env) or None, host_config=api.create_host_config(**host))["Id"]

        try:
            try:
                container_id = create()
            except APIError as exc:
                if exc.status_code != 409:  # a leftover of an earlier try of this trial holds the name
                    raise
                remove_container(name)
                container_id = create()
            api.start(container_id)
        except DOCKER_ERRORS as exc:
            raise ContainerError("run-agent", f"container failed to start from {image}: {exc}") from exc
        return cls(container_id, name)

    # -- files -------------------------------------------------------------------------------

    def put(self, data, what: str, stage: str) -> None:
        """Extract a tar (bytes, or a seekable file streamed from disk) at ``/`` in the container."""

        def attempt() -> bool:
            if hasattr(data, "seek"):
                data.seek(0)  # a retried upload must send the file from its start again
            return get_client().api.put_archive(self.id, "/", data)

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

    def download(self, path: str, dest: Path, stage: str) -> list[str]:
        """Copy container ``path`` (a directory) into ``dest/<basename>`` after checking it all."""
        top = Path(path).name
        try:
            stream, _ = _retry_transient(get_client().api.get_archive)(self.id, path)
            return extract_checked(stream, dest, top)
        except NotFound:
            return []
        except TransferError:
            raise
        except OSError as exc:
            if disk_full(exc):  # our disk, not the container's doing: the job stops (see errors.disk_full)
                raise
            raise TransferError(stage, f"download of {path} failed: {exc}") from exc
        except DOCKER_ERRORS as exc:
            raise TransferError(stage, f"download of {path} failed: {exc}") from exc

    def download_logs(self, path: str, dest: Path, stage: str, keep: tuple[str, ...],
                      max_file_bytes: int) -> LogsOutcome:
        """Copy ``path/<k>`` for ``k`` in ``keep`` into ``dest/<k>``, streamed: unsafe entries
        skipped and listed, every file cut at ``max_file_bytes`` (see ``log_download``)."""
        try:
            stream, _ = _retry_transient(get_client().api.get_archive)(self.id, path)
            return extract_logs(stream, dest, Path(path).name, keep, max_file_bytes)
        except NotFound:
            return LogsOutcome(max_file_bytes=max_file_bytes)
        except (*DOCKER_ERRORS, OSError, tarfile.TarError) as exc:
            if disk_full(exc):  # our disk, not the container's doing: the job stops (see errors.disk_full)
                raise
            raise TransferError(stage, f"download of {path} failed: {exc}") from exc

    # -- commands ----------------------------------------------------------------------------

    def run(self, argv: list[str], stage: str, user: str = "root", timeout: float = 60) -> tuple[int, str]:
        """A short attached command (tbflow's own tools); returns (exit code, stdout+stderr)."""
        api = get_client().api
        try:
            # in "/": the agent may have removed the image's WORKDIR, which would fail the exec
            exec_id = api.exec_create(self.id, argv, user=user, stdout=True, stderr=True, workdir="/")["Id"]
            out = api.exec_start(exec_id)
            code = api.exec_inspect(exec_id).get("ExitCode")
        except DOCKER_ERRORS as exc:
            raise ContainerError(stage, f"{argv[0]} failed in the container: {exc}") from exc
        return (code if code is not None else -1), out.decode("utf-8", errors="replace")

    def start_detached(self, script: str, args: list[str], stage: str, *, user: str | None = None,
                       env: dict[str, str] | None = None, workdir: str | None = None) -> str:
        api = get_client().api
        try:
            exec_id = api.exec_create(self.id, ["/bin/sh", "-c", script, "tbflow", *args], user=user or "",
                                      environment=env or None, workdir=workdir, stdin=False,
                                      stdout=False, stderr=False)["Id"]
            api.exec_start(exec_id, detach=True)
        except DOCKER_ERRORS as exc:
            raise ContainerError(stage, f"could not start the command: {exc}") from exc
        return exec_id

    def start_captured(self, script: str, args: list[str], stage: str, *, user: str = "",
                       env: dict[str, str] | None = None) -> ExecCapture:
        """Like ``start_detached``, but tbflow reads the command's stdout on the host."""
        return ExecCapture.start(self.id, ["/bin/sh", "-c", script, "tbflow", *args], stage, user=user, env=env)

    def working_dir(self, stage: str) -> str:
        """The container's working directory (the task's ``workdir`` or the image's WORKDIR)."""
        try:
            return get_client().api.inspect_container(self.id)["Config"].get("WorkingDir") or ""
        except DOCKER_ERRORS as exc:
            raise ContainerError(stage, f"could not inspect the container: {exc}") from exc

    def wait(self, exec_id: str, timeout: float, stage: str, on_deadline) -> ExecResult:
        """Poll a detached exec until its main process exits or ``timeout`` passes.

        At the deadline ``on_deadline()`` must stop the command's processes; we then wait for
        the exec to report its exit. Raises ``Interrupted`` when the job is being stopped.
        """
        api = get_client().api
        start = time.monotonic()
        deadline = start + timeout
        delay = POLL_START_SEC
        timed_out = False
        while True:
            try:
                info = _retry_transient(api.exec_inspect)(exec_id)
            except DOCKER_ERRORS as exc:
                raise ContainerError(stage, f"lost track of the command: {exc}") from exc
            if not info.get("Running"):
                return ExecResult(info.get("ExitCode"), timed_out, time.monotonic() - start)
            interrupts.check()
            now = time.monotonic()
            if not timed_out and now >= deadline:
                timed_out = True
                on_deadline()
                deadline = now + 15  # grace for the exec to notice its process died
            elif timed_out and now >= deadline:
                return ExecResult(None, True, time.monotonic() - start)
            time.sleep(min(delay, max(0.0, deadline - now)))
            delay = min(delay * 1.5, POLL_MAX_SEC)

    def run_agent_command(self, argv: list[str], sid_file: str, stdout_path: str, stderr_path: str | None,
                          stage: str, *, user: str | None, env: dict[str, str], workdir: str | None) -> str:
        return self.start_detached(AGENT_WRAPPER, [sid_file, stdout_path, stderr_path or "", *argv], stage,
                                   user=user, env=env, workdir=workdir)

    def processes(self, stage: str, kill_sid_globs: list[str] | None = None) -> tuple[list[ProcessInfo], list[ProcessInfo]]:
        """(killed, left running). With ``kill_sid_globs`` the sessions named there are killed."""
        mode = "kill" if kill_sid_globs else "list"
        code, out = self.run(["/bin/sh", "-c", PROCESS_TOOL, "tbflow-procs", mode, *(kill_sid_globs or [])], stage)
        if code != 0:
            raise ContainerError(stage, f"process tool exited {code}: {out.strip()[-500:]}")
        return parse_process_lines(out)

    def remove(self) -> None:
        remove_container(self.id)


def parse_process_lines(out: str) -> tuple[list[ProcessInfo], list[ProcessInfo]]:
    """(killed, left running) from the process tool's ``killed|left PID SID CMD`` lines."""
    killed: list[ProcessInfo] = []
    left: list[ProcessInfo] = []
    for line in out.splitlines():
        parts = line.split(" ", 3)
        if len(parts) < 3 or parts[0] not in ("killed", "left") or not (parts[1].isdigit() and parts[2].isdigit()):
            continue
        info = ProcessInfo(pid=int(parts[1]), sid=int(parts[2]), command=(parts[3] if len(parts) > 3 else "").strip())
        (killed if parts[0] == "killed" else left).append(info)
    return killed, left


def remove_container(name_or_id: str) -> None:
    """Remove a container (gone already is fine); raise ``ContainerError`` when the engine fails,
    also when it does not answer at all (a requests error, not a ``DockerException``)."""
    try:
        get_client().api.remove_container(name_or_id, force=True, v=True)
    except NotFound:
        pass
    except DOCKER_ERRORS as exc:
        if "is already in progress" not in str(exc) and "No such container" not in str(exc):
            raise ContainerError("cleanup", f"could not remove container {name_or_id}: {exc}") from exc


def remove_trial_container(job_id: str, trial_id: str) -> None:
    """Remove a trial's container if it exists; a failure is left to the job-level cleanup."""
    try:
        remove_container(container_name(job_id, trial_id))
    except ContainerError:
        pass


def remove_job_containers(job_id: str, label: str = LABEL_JOB) -> int:
    """Remove every container whose ``label`` is ``job_id`` (leftovers of a crash, or on Ctrl-C).

    ``label`` may be ``LABEL_FLOW_RUN`` to remove what one Prefect flow run started.
    """
    return remove_listed(get_client().api.containers(all=True, filters={"label": f"{label}={job_id}"}))


def remove_listed(containers: list[dict]) -> int:
    """Remove the containers of an engine listing (``{"Id": ...}`` dicts); return how many went.

    A removal that fails is logged, never raised: it must not mask why a job is stopping, and the
    leftover keeps its labels, so the next command that touches the job removes it.
    """
    n = 0
    for c in containers:
        try:
            remove_container(c["Id"])
            n += 1
        except ContainerError as exc:
            _log.warning("%s", exc)
    return n


def run_dir_layout() -> list[tuple[str, int]]:
    """Directories every trial container gets before the agent starts."""
    return [("/logs", 0o755), ("/logs/agent", 0o777), ("/logs/verifier", 0o777),
            ("/opt/tbflow", 0o755), (RUN_DIR, 0o1777)]
