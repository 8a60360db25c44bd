"""The harness interface: what tbflow needs to know to run one agent in a task container.

A harness is a small declarative adapter. tbflow owns everything around it — the container, the
process session, the deadline, the logs — so every harness sees the same task environment: the
image's HOME, PATH, ENV and WORKDIR plus ``[environment] env``. What a harness adds is limited to
what it declares here: files uploaded under a harness-owned path, environment variables of its
own, the command, and how to read model usage from its event log.

``kind`` decides validity: a ``reference`` harness (oracle, nop) is scored whenever it ran; a
``model`` harness is scored only if it reached the model — its own event log shows tokens, or,
when it was cut off before logging them, tbflow's gateway relayed successful responses with
tokens (``tasks_lib.trial.trial_verdict``).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from pathlib import Path

from typing import Literal

from pydantic import BaseModel, Field

from tasks_lib.records.record_models import HarnessKind, Usage
from tasks_lib.task.task_model import Task


class Upload(BaseModel):
    """A host directory copied into the container at ``target`` before the agent starts."""

    source: Path
    target: str


class AgentCommand(BaseModel):
    """How to start the agent inside the container.

    ``argv`` runs with stdin from /dev/null in its own session. Its stdout goes to
    ``/logs/agent/<stdout_name>``; stderr to ``/logs/agent/<stderr_name>``, or into the stdout
    file when ``stderr_name`` is None (the oracle's single ``oracle.txt``).
    """

    argv: list[str]
    env: dict[str, str] = Field(default_factory=dict)
    stdout_name: str
    stderr_name: str | None = None
    user: str | None = None


WireApi = Literal["openai-responses", "openai-chat", "anthropic-messages", "gemini-generate-content"]


class ModelAccess(BaseModel):
    """How a model harness reaches the model from inside the container, for one trial.

    ``base_url`` is the in-container loopback address of tbflow's relay to the host-side model
    gateway (e.g. ``http://127.0.0.1:18080``, no path); the gateway routes by path
    (``/v1/responses``, ``/v1/chat/completions``, ``/v1/messages``, and Gemini's
    ``/v1beta/models/<model>:generateContent``/``:streamGenerateContent``). ``token`` is a per-trial
    token the gateway accepts only for this trial: it is the only credential the CLI ever sees.
    ``model`` is the model id without the provider prefix; ``provider`` the prefix of
    ``--model PROVIDER/MODEL``.
    """

    base_url: str
    token: str
    provider: str
    model: str


class PreparedHarness(BaseModel):
    """What prepare-harness produced on the host for one trial's harness."""

    name: str
    version: str
    kind: HarnessKind
    uploads: list[Upload] = Field(default_factory=list)


class Harness(ABC):
    """Base class of every harness adapter."""

    name: str
    version: str
    kind: HarnessKind
    #: exit codes that mean a deliberate stop (e.g. a budget stop), recorded as such
    semantic_exit_codes: dict[int, str] = {}

    @abstractmethod
    def prepare(self, task: Task) -> PreparedHarness:
        """Check the harness can run ``task`` and stage its files on the host.

        Raise ``HarnessSetupError`` when it cannot (the trial becomes invalid: harness).
        """

    #: the wire API a model harness speaks to the gateway (None for reference harnesses)
    wire_api: WireApi | None = None

    @abstractmethod
    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None) -> AgentCommand:
        """The command that runs the agent on the task's instruction.

        ``access`` is None for reference harnesses and set for model harnesses.
        """

    def parse_usage(self, agent_dir: Path) -> Usage | None:
        """Usage from the downloaded agent logs; None when the harness reports none."""
        return None

    def problem_before_job(self) -> str | None:
        """What a cheap check finds wrong before a job starts (a local bundle edited since it was
        pinned), in one line naming the file; None when nothing. Why: ``prepare`` finds it per
        trial, after the job started, and every trial of the harness is then invalid."""
        return None

    def error_line(self, agent_dir: Path) -> str | None:
        """The harness's own error message from its logs (e.g. its 401 line), if any."""
        return None
