"""run-agent for a host-side agent: its ``run`` on a thread of the host, under the trial deadline.

The outcome has the shape a CLI's has (``AgentOutcome``), so classify and the reports treat both
alike: ``exit_code`` 0 when ``run`` returned, 1 when it raised, None when it was cut off;
``timed_out`` at the deadline; ``stdout_log`` is its event log in ``host-agent/``.

At the deadline the session is stopped (no command starts any more), every command session it
started is killed inside the container (the same judge kill as a CLI's), and ``run`` gets
``GRACE_SEC`` to return; one that does not is abandoned on its daemon thread and recorded so
(``abandoned``): the trial goes on, its token is revoked, a job never waits on a stuck loop.

A plug-in that raises (``HarnessPluginError`` from ``plugin_guard``, or a ``HarnessSetupError``):
after it reached the model (its log or the gateway shows tokens) the trial is scored on what was
done, with a ``harness-raised`` flag and the traceback as evidence; before, the error goes up and
the trial is invalid: harness with the traceback (docs/write-a-harness.md, "Host-side agents").
A built-in's unexpected exception is a tbflow bug and goes up as it is.
"""

from __future__ import annotations

import threading
import time
import traceback
from pathlib import Path

from tasks_lib.errors import PLUGIN_TRACEBACK, ContainerError, HarnessSetupError
from tasks_lib.gateway.exchange.exchange_model import EXCHANGE_FILE
from tasks_lib.gateway.gateway_usage import GatewayUsage
from tasks_lib.trial.model_link import close_host_link, open_host_link
from tasks_lib.container.sandbox import Sandbox
from tasks_lib.container.container_outcomes import ProcessInfo
from tasks_lib.records.record_models import AgentOutcome, TrialFlag, TrialSpec
from tasks_lib.task.task_model import Task
from tasks_lib import interrupts
from tasks_lib.trial.trial_evidence import reached_model_by
from tasks_lib.trial.host_agent_api import HOST_LOGS_DIR, TBFLOW_LOG, AgentSession, HostHarness
from tasks_lib.trial.host_env import STAGE, SandboxEnv

#: how long ``run`` may take to return after the deadline before it is abandoned
GRACE_SEC = 10.0


class _Loop(threading.Thread):
    """The harness's ``run`` on a daemon thread; what it raised is kept for the stage."""

    def __init__(self, harness: HostHarness, session: AgentSession, trial_id: str) -> None:
        super().__init__(name=f"host-agent:{trial_id}", daemon=True)
        self.harness, self.session = harness, session
        self.error: BaseException | None = None
        self.traceback = ""

    def run(self) -> None:
        try:
            self.harness.run(self.session)
        except BaseException as exc:  # noqa: BLE001 - judged by the stage, on its own thread
            self.error = exc
            self.traceback = getattr(exc, "traceback_text", None) or traceback.format_exc()


class HostRun:
    """One host agent's run-agent: ``start`` it, then ``finish`` it into an outcome."""

    def __init__(self, sandbox: Sandbox, spec: TrialSpec, task: Task, harness: HostHarness, trial_dir: Path,
                 timeout_sec: float) -> None:
        self.sandbox, self.spec, self.harness, self.trial_dir = sandbox, spec, harness, trial_dir
        self.timeout_sec = timeout_sec
        self.logs_dir = trial_dir / HOST_LOGS_DIR
        self.logs_dir.mkdir(parents=True, exist_ok=True)
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.sessions: list[int] = []
        self.killed: list[ProcessInfo] = []
        self.problems: list[str] = []
        self.began = time.monotonic()
        self.deadline = self.began + timeout_sec
        self.model = (open_host_link(spec.job_id, spec.trial_id, spec.model or "", harness.wire_api,
                                     trial_dir / EXCHANGE_FILE)
                      if harness.kind == "model" else None)
        env = SandboxEnv(sandbox, self.deadline, self.stop, self.sessions, self.lock)
        session = AgentSession(task=task, instruction=task.instruction, model=self.model, logs_dir=self.logs_dir,
                               deadline=self.deadline, env=env, stop=self.stop)
        self.loop = _Loop(harness, session, spec.trial_id)

    def run(self) -> tuple[AgentOutcome, list[TrialFlag]]:
        gateway: GatewayUsage | None = None
        try:
            self.loop.start()
            timed_out = self._wait()
            if timed_out:
                self._stop_at_deadline()
                self.loop.join(GRACE_SEC)
        finally:
            self.stop.set()
            if self.model is not None:
                gateway = close_host_link(self.spec.job_id, self.spec.trial_id)
        abandoned = self.loop.is_alive()
        if abandoned:
            self._note(f"the agent's run() did not return within {GRACE_SEC:g} s after the deadline: abandoned")
        error = None if abandoned else self.loop.error
        if error is not None:
            self._note(f"run() raised:\n{self.loop.traceback}")
        outcome = AgentOutcome(
            exit_code=None if timed_out or abandoned else (1 if error is not None else 0), timed_out=timed_out,
            timeout_sec=self.timeout_sec, duration_sec=round(min(time.monotonic(), self.deadline) - self.began, 3),
            stdout_log=self._log(self.harness.event_log_name), stderr_log=self._log(TBFLOW_LOG),
            gateway_usage=gateway, abandoned=abandoned)
        return outcome, self._judge_error(error, outcome)

    def _wait(self) -> bool:
        """Wait for ``run`` until the deadline; True when the deadline came first."""
        while self.loop.is_alive():
            left = self.deadline - time.monotonic()
            if left <= 0:
                return True
            self.loop.join(min(0.25, left))
            interrupts.check()
        return False

    def stop_now(self) -> None:
        """Stop the agent before its deadline (it passed a bound: ``storage_watch``): no command
        starts any more and the ones running are killed; ``run`` then ends as at the deadline."""
        self._stop_at_deadline()

    def _stop_at_deadline(self) -> None:
        with self.lock:  # no command starts after this; the ones that did are in the list
            self.stop.set()
            sessions = list(self.sessions)
        if sessions:
            try:
                killed, _ = self.sandbox.processes(STAGE, sessions)
                self.killed.extend(killed)
            except ContainerError as exc:
                self.problems.append(exc.message)

    def _judge_error(self, error: BaseException | None, outcome: AgentOutcome) -> list[TrialFlag]:
        if error is None:
            return []
        if not isinstance(error, HarnessSetupError):
            raise error  # a tbflow error keeps its meaning; a built-in's bug is tbflow's (status error)
        detail = error.detail
        if self.harness.kind == "model" and self._reached_model(outcome):
            (self.trial_dir / PLUGIN_TRACEBACK).write_text(self.loop.traceback, encoding="utf-8")
            return [TrialFlag(kind="harness-raised", evidence=PLUGIN_TRACEBACK,
                              message=f"{detail}; raised after it reached the model: scored on what it did")]
        raise error

    def _reached_model(self, outcome: AgentOutcome) -> bool:
        usage = self.harness.parse_usage(self.logs_dir)
        return reached_model_by(outcome.model_copy(update={"usage": usage})) is not None

    def _log(self, name: str) -> str | None:
        """``host-agent/NAME`` for the record, when the file is there."""
        return f"{HOST_LOGS_DIR}/{name}" if (self.logs_dir / name).is_file() else None

    def _note(self, text: str) -> None:
        with (self.logs_dir / TBFLOW_LOG).open("a", encoding="utf-8") as fh:
            fh.write(f"tbflow: {text}\n")

