"""tbflow's error taxonomy.

Every failure tbflow can name has a type here, so that callers decide by type, never by matching
message strings. Three families matter:

* ``InputError``: the user gave something tbflow cannot use (a flag, a path, a task file). The CLI
  exits 2 and nothing is written.
* ``EnvironmentFailure``: the machinery around the agent failed (image build, container start,
  archive transfer, Docker API). A trial that hits one is recorded ``invalid: environment``; these
  are the only failures retries may repeat.
* ``HarnessSetupError``: the harness could not be prepared for the task (e.g. oracle on a task
  with no solution). The trial is recorded ``invalid: harness``.

Agent and verifier outcomes (timeouts, exit codes, wrong answers, missing rewards) are *results*,
not exceptions: they are recorded data that ``classify`` turns into a verdict.
"""

from __future__ import annotations

import errno


class TbflowError(Exception):
    """Base of every error tbflow raises on purpose.

    ``str()`` is one readable line, because Prefect makes it the message of the state of a task or
    flow run that raised it ("Task run encountered an exception ImageBuildError: ..."), which the
    UI shows as one line (a build log's tail read there as literal ``\\n`` and colour codes).
    ``detail`` is the whole text (a build log's tail, line by line), and ``repr()`` shows it:
    Prefect logs a failed or retried task run's exception with ``%r``, so the run's log keeps it.
    """

    @property
    def detail(self) -> str:
        """The full message, line breaks kept."""
        return super().__str__()

    def __str__(self) -> str:
        from tasks_lib.text_clean import one_line

        return one_line(self.detail)

    def __repr__(self) -> str:
        from tasks_lib.text_clean import clean_text

        return clean_text(f"{type(self).__name__}: {self.detail}").strip()


class InputError(TbflowError):
    """Bad user input. ``where`` names the flag, file or field at fault."""

    def __init__(self, where: str, message: str) -> None:
        self.where = where
        self.message = message
        super().__init__(f"{where}: {message}")


class TaskFormatError(InputError):
    """A task directory that is not a valid Terminal-Bench 2.x task.

    ``where`` is the file (and field, when one is at fault), e.g.
    ``examples/tasks/hello/task.toml [environment] memory_mb``.
    """


class DockerUnavailableError(TbflowError):
    """No Docker engine answers. The message says what to start; no stack trace is shown."""


class RunnerUnavailable(TbflowError):
    """tbflow cannot supply its own verifier runner (``tasks_lib/container/supplied_runner``).

    ``reason`` says which input cannot be met and what would fix it: a Python other than the one
    tbflow ships (3.13), a host that is not amd64, a registry (Debian's pool, PyPI) that cannot be
    reached, a wheel with no manylinux/py3 build, a Debian build whose paths the hardening does not
    know. Not an ``EnvironmentFailure`` of one trial: the same for every trial that asks for that
    runner, so a retry would only repeat it; the caller decides (refuse the task, or fall back).
    """

    def __init__(self, reason: str) -> None:
        self.reason = reason
        super().__init__(f"the supplied verifier runner is unavailable: {reason}")


class HarnessSetupError(TbflowError):
    """The harness cannot run on this task (bad adapter config, missing solution, ...)."""


class HarnessPluginError(HarnessSetupError):
    """A plug-in harness raised an exception of its own while preparing or building its command.

    The plug-in's code is not tbflow's, so its bug is the harness's failure (invalid: harness),
    never a tbflow error nor the environment's. ``traceback_text`` is the plug-in's traceback; the
    trial flow keeps it in the trial dir (``PLUGIN_TRACEBACK``) as the evidence.
    """

    def __init__(self, stage: str, message: str, traceback_text: str) -> None:
        self.stage = stage
        self.traceback_text = traceback_text
        super().__init__(message)


class DownloadBoundExceeded(HarnessSetupError):
    """A copy out of the container that a harness asked for (``ContainerEnv.download``) passed its
    bound of bytes or time (docs/limits.md). What the container holds is the agent's doing, so
    this is never the environment's failure; a host-side plug-in may catch it, and one that lets it
    go up is judged as any plug-in that raises (scored and flagged once it reached the model)."""

    def __init__(self, stage: str, message: str) -> None:
        self.stage = stage
        self.message = message
        super().__init__(f"{stage}: {message}")


#: the file in a trial dir holding a plug-in harness's traceback
PLUGIN_TRACEBACK = "harness-error.txt"


class EnvironmentFailure(TbflowError):
    """The environment around the agent failed; the trial is invalid: environment.

    ``stage`` is the trial stage it happened in; ``evidence`` a path (relative to the trial
    dir, like every path in a trial record) of the log that shows it, when there is one.
    ``retryable`` is False for failures that a new try would only repeat.
    """

    retryable = True

    def __init__(self, stage: str, message: str, evidence: str | None = None) -> None:
        self.stage = stage
        self.message = message
        self.evidence = evidence
        super().__init__(f"{stage}: {message}")


class ImageBuildError(EnvironmentFailure):
    """``docker build`` failed or ran past ``[environment] build_timeout_sec``."""


class ContainerError(EnvironmentFailure):
    """The trial container could not be created, started, or it vanished."""


class HealthcheckFailed(EnvironmentFailure):
    """The task's ``[environment.healthcheck]`` did not pass before the agent started: the task's
    environment is not ready, which is never the agent's result (it has not run). Retried as
    other environment failures are: a service that starts slowly under load may pass next time."""


class TransferError(EnvironmentFailure):
    """Moving files into or out of the container failed."""


class UnsafeArchiveError(TransferError):
    """An archive from the container holds a member that would land outside its directory.

    Not retried: what the trial wrote into its logs is deterministic, and a new try costs a whole
    agent run only to be refused again."""

    retryable = False


def disk_full(exc: BaseException) -> bool:
    """True for "no space left" (or quota) under tbflow's own dirs: not the trial's fault, not bad
    input, and no retry can help, so the job stops and says so (the CLI's exit code 4)."""
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)
