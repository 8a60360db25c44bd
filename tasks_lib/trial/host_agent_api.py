"""The host-side agent contract: an agent whose loop runs on the host and acts in the container.

Many agents (Terminus, mini-swe-agent, SkVM-style runtimes) are a loop in a Python process that
calls the model and runs shell commands in the task environment. A ``HostHarness`` is such an
agent: instead of a ``command`` it has ``run(session)``, which tbflow calls on a thread of its own
on the host, under the trial's agent timeout. Everything else is the same as for a CLI harness
(docs/write-a-harness.md, "Host-side agents"):

* ``session.env.exec(...)`` runs each command *inside the container*, started by tbflow's launcher
  in a session tbflow tracks, with the image's HOME, PATH, ENV, WORKDIR and user as every harness
  gets them; a per-call timeout kills that call's session inside the container (never only the
  ``docker exec`` client), and every session is killed at the trial deadline and, when the agent
  was cut off, before the verifier.
* ``session.model`` reaches the model only through tbflow's gateway (its unix socket on the host,
  a per-trial token good while the agent runs): no key is handed out and the gateway counts usage
  as the second witness of reaching the model.
* ``session.logs_dir`` is a host directory in the trial dir that nothing in the container can
  write. Write the event log there *as things happen* (one JSON line per event, flushed): an agent
  cut off at the deadline then still shows the usage it had (``parse_usage`` reads that dir).

At the deadline the session is marked stopped (``session.stopped``; ``exec`` then returns at once,
``timed_out``) and tbflow kills the command sessions; a ``run`` that does not return within a
short grace is abandoned (recorded as such) and never holds up the job.
"""

from __future__ import annotations

import threading
import time
from abc import abstractmethod
from pathlib import Path
from typing import Protocol

import httpx
from pydantic import BaseModel, ConfigDict

from tasks_lib.task.task_model import Task
from tasks_lib.trial.harness_api import AgentCommand, Harness, ModelAccess, PreparedHarness

#: the host directory of a host harness's own logs, in the trial dir (``trial_dir/agent`` is the
#: container's ``/logs/agent``, downloaded after the verifier)
HOST_LOGS_DIR = "host-agent"
#: what tbflow itself writes there about the run (an exception, an abandoned loop)
TBFLOW_LOG = "tbflow.log"


class ExecOutput(BaseModel):
    """What one command run in the container gave.

    ``output`` is stdout and stderr together, decoded as UTF-8 (bad bytes replaced), at most
    ``ContainerEnv.max_output_bytes`` of it (``truncated``; ``output_bytes`` is the whole size).
    ``exit_code`` is None when the command did not end by itself and no exit code was seen.
    ``timed_out``: cut off at the call's timeout or the trial deadline. ``error``: tbflow could not
    run the command (the container broke); the agent's own result, shown, never raised.
    """

    exit_code: int | None
    output: str
    timed_out: bool = False
    truncated: bool = False
    output_bytes: int = 0
    duration_sec: float = 0.0
    error: str | None = None


class ContainerEnv(Protocol):
    """The trial's container as a host agent sees it."""

    max_output_bytes: int
    #: the most one ``download`` brings to the host (archive bytes; docs/limits.md)
    max_download_bytes: int

    def exec(self, cmd: str, timeout: float | None = None, cwd: str | None = None, user: str | None = None,
             env: dict[str, str] | None = None) -> ExecOutput:
        """Run ``cmd`` with ``bash -c`` in the container, in a session of its own; ``timeout``
        (seconds, capped at the time left) kills that session."""
        ...

    def upload(self, src: Path, dst: str) -> None:
        """Copy a host file or directory to the container path ``dst`` (owned by root)."""
        ...

    def download(self, src: str, dst: Path) -> None:
        """Copy the container file or directory ``src`` to the host path ``dst`` (checked). Raises
        ``FileNotFoundError`` when it is not there, and ``DownloadBoundExceeded`` (tasks_lib/errors.py)
        when it is more than ``max_download_bytes`` or takes longer than the time left (at least
        30 s, at most 300 s): what the container holds is the agent's doing, a plug-in may catch it."""
        ...


class HostModelAccess(ModelAccess):
    """The model through tbflow's gateway, from the host: ``base_url`` is a placeholder host
    (requests go over the gateway's unix socket ``socket_path``), ``token`` the per-trial token.
    ``http_client()`` is ready to use; OpenAI-style clients take ``openai_base_url``."""

    model_config = ConfigDict(frozen=True)
    socket_path: Path

    @property
    def openai_base_url(self) -> str:
        return f"{self.base_url}/v1"

    def http_client(self, timeout: float | httpx.Timeout = 600.0) -> httpx.Client:
        """An ``httpx.Client`` over the gateway's socket with the trial's token set."""
        return httpx.Client(transport=httpx.HTTPTransport(uds=str(self.socket_path)), base_url=self.base_url,
                            headers={"Authorization": f"Bearer {self.token}"}, timeout=timeout, trust_env=False)


class AgentSession:
    """What ``HostHarness.run`` gets for one trial (see the module docstring)."""

    def __init__(self, *, task: Task, instruction: str, model: HostModelAccess | None, logs_dir: Path,
                 deadline: float, env: ContainerEnv, stop: threading.Event) -> None:
        self.task = task
        self.instruction = instruction
        self.model = model
        self.logs_dir = logs_dir
        #: ``time.monotonic()`` at the trial's agent deadline
        self.deadline = deadline
        self.env = env
        self._stop = stop

    def remaining(self) -> float:
        """Seconds left before the deadline (never below 0)."""
        return max(0.0, self.deadline - time.monotonic())

    @property
    def stopped(self) -> bool:
        """True from the deadline on (or when the job is stopping): return from ``run``."""
        return self._stop.is_set() or time.monotonic() >= self.deadline


class HostHarness(Harness):
    """Base class of host-side agents: implement ``run`` (and, for ``kind = "model"``,
    ``parse_usage``/``error_line`` reading ``logs_dir``, which tbflow passes to them)."""

    #: the event log's name in ``logs_dir``: the record's evidence for the agent
    event_log_name: str = "events.jsonl"

    @abstractmethod
    def run(self, session: AgentSession) -> None:
        """Run the agent on ``session.instruction`` until done or ``session.stopped``."""

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None) -> AgentCommand:
        raise TypeError(f"{self.name} is a host-side harness: tbflow calls its run(), it has no command")
