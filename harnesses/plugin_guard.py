"""A plug-in's own bugs are its harness's failure, never tbflow's error nor the environment's.

For a built-in, an exception tbflow does not name is a tbflow bug (status ``error``, re-run on
resume). A plug-in's code is not tbflow's: when its ``prepare``, ``command`` or (a host-side agent)
``run`` raises anything but
tbflow's typed errors, the trial is invalid: harness, with the plug-in's traceback kept in the
trial dir (``PLUGIN_TRACEBACK``), and a resume does not run it again unless asked
(``--rerun-invalid=harness``). When its usage parser or error-line reader raises, the trial reads
as if the plug-in reported nothing (the gateway's witness still counts) and the traceback is kept
the same way. ``guarded`` wraps only plug-ins; built-ins run as they are.
"""

from __future__ import annotations

import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

from tasks_lib.errors import PLUGIN_TRACEBACK, HarnessPluginError, TbflowError, disk_full
from tasks_lib.records.harness_source import HarnessSource
from tasks_lib.records.record_models import Usage
from tasks_lib.task.task_model import Task
from tasks_lib.trial.harness_api import AgentCommand, Harness, ModelAccess, PreparedHarness
from tasks_lib.trial.host_agent_api import AgentSession, HostHarness

T = TypeVar("T")


def _plugin_failure(harness: Harness, stage: str, exc: Exception) -> HarnessPluginError:
    return HarnessPluginError(stage, f"plug-in harness {harness.name} raised {type(exc).__name__}: {exc} "
                                     f"(traceback in {PLUGIN_TRACEBACK})", traceback.format_exc())


def _passes(exc: Exception) -> bool:
    """tbflow's typed errors (environment, harness setup, a stop) and a full disk keep their meaning."""
    return isinstance(exc, TbflowError) or disk_full(exc)


class GuardedHarness(Harness):
    """``inner`` with its exceptions turned into harness failures (see the module docstring)."""

    def __init__(self, inner: Harness) -> None:
        self.inner = inner
        self.name, self.version, self.kind = inner.name, inner.version, inner.kind
        self.wire_api = inner.wire_api
        self.semantic_exit_codes = inner.semantic_exit_codes

    def __getattr__(self, attr: str):
        """Anything else a caller reads (a CLI harness's log names) is the plug-in's own."""
        return getattr(self.inner, attr)

    def prepare(self, task: Task) -> PreparedHarness:
        try:
            return self.inner.prepare(task)
        except Exception as exc:
            if _passes(exc):
                raise
            raise _plugin_failure(self.inner, "prepare-harness", exc) from exc

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None) -> AgentCommand:
        try:
            return self.inner.command(task, prepared, access)
        except Exception as exc:
            if _passes(exc):
                raise
            raise _plugin_failure(self.inner, "run-agent", exc) from exc

    def parse_usage(self, agent_dir: Path) -> Usage | None:
        return self._read(self.inner.parse_usage, agent_dir)

    def error_line(self, agent_dir: Path) -> str | None:
        return self._read(self.inner.error_line, agent_dir)

    @staticmethod
    def _read(method: Callable[[Path], T], agent_dir: Path) -> T | None:
        """What the plug-in reads from its logs; None (and its traceback kept) when it raises."""
        try:
            return method(agent_dir)
        except Exception as exc:
            if _passes(exc):
                raise
            _keep_traceback(agent_dir.parent, method.__name__)
            return None


def _keep_traceback(trial_dir: Path, method: str) -> None:
    with (trial_dir / PLUGIN_TRACEBACK).open("a", encoding="utf-8") as f:
        f.write(f"{method}:\n{traceback.format_exc()}\n")


class GuardedHostHarness(GuardedHarness, HostHarness):
    """A host-side plug-in, guarded: ``run`` raising is a ``HarnessPluginError``, which run-agent
    judges by whether it had reached the model (``tasks_lib/trial/host_run.py``)."""

    inner: HostHarness

    def __init__(self, inner: HostHarness) -> None:
        super().__init__(inner)
        self.event_log_name = inner.event_log_name

    def run(self, session: AgentSession) -> None:
        try:
            self.inner.run(session)
        except Exception as exc:
            if _passes(exc):
                raise
            raise _plugin_failure(self.inner, "run-agent", exc) from exc


def guarded(harness: Harness, source: HarnessSource) -> Harness:
    """``harness`` as the trial flow should call it: plug-ins guarded, built-ins as they are."""
    if source.origin == "built-in":
        return harness
    return GuardedHostHarness(harness) if isinstance(harness, HostHarness) else GuardedHarness(harness)
