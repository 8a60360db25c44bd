"""A command the task itself declares (a healthcheck, a collect hook), run as Harbor's exec runs it.

Harbor execs such commands with ``sh -c`` in the container's working directory (the task's
``workdir``, else the image's) as the container's user unless the command names one. The
healthcheck and the collect hooks share this, and one ``inspect`` answers both the directory and
the user (and the image a separate verifier starts from).
"""

from __future__ import annotations

from dataclasses import dataclass

from tasks_lib.container.sandbox import Sandbox
from tasks_lib.task.task_model import Task


@dataclass(frozen=True)
class CommandContext:
    workdir: str
    user: str
    #: the image the container runs (its id)
    image: str


def command_context(sandbox: Sandbox, task: Task, stage: str) -> CommandContext:
    info = sandbox.inspect(stage)
    config = info.get("Config") or {}
    return CommandContext(workdir=task.config.environment.workdir or config.get("WorkingDir") or "/",
                          user=config.get("User") or "root", image=info.get("Image") or "")


def run_task_command(sandbox: Sandbox, ctx: CommandContext, command: str, timeout_sec: float, stage: str,
                     user: str | int | None = None) -> tuple[int | None, str]:
    """(exit code, or None when it did not end within ``timeout_sec``; its output)."""
    return sandbox.run_tool(["/bin/sh", "-c", command], stage, user=str(user) if user is not None else ctx.user,
                            timeout=timeout_sec, workdir=ctx.workdir)
