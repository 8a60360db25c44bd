"""The task's ``[environment.healthcheck]``, run before the agent starts, as Harbor runs it.

Docker HEALTHCHECK's semantics (Harbor's ``run_healthcheck``): the command runs with ``sh -c`` in
the trial's container; exit 0 passes at once. During ``start_period_sec`` after the first check a
failure does not count and the next check comes after ``start_interval_sec``; after it,
``retries`` consecutive failures fail the trial, checks ``interval_sec`` apart. A check that does
not end within ``timeout_sec`` is a failure. The container is the task's, untouched: the agent
has not started, so a failed healthcheck is ``invalid: environment``, never the agent's 0.

``next_check`` is the decision, pure; ``run_healthcheck`` the loop around the container.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from tasks_lib import interrupts
from tasks_lib.container.sandbox import Sandbox
from tasks_lib.errors import HealthcheckFailed
from tasks_lib.task.task_model import HealthcheckConfig
from tasks_lib.trial.task_command import CommandContext, run_task_command

LOG = "healthcheck.log"


@dataclass(frozen=True)
class Next:
    """After one check: ``passed``, ``failed`` (the trial's end), or wait ``wait_sec`` and check again."""

    passed: bool = False
    failed: bool = False
    wait_sec: float = 0.0
    failures: int = 0


def next_check(hc: HealthcheckConfig, ok: bool, since_start_sec: float, failures: int) -> Next:
    """What one check's result means, given the time since the first check and the consecutive
    failures counted so far."""
    if ok:
        return Next(passed=True)
    if since_start_sec < hc.start_period_sec:
        return Next(wait_sec=hc.start_interval_sec, failures=failures)
    failures += 1
    if failures >= hc.retries:
        return Next(failed=True, failures=failures)
    return Next(wait_sec=hc.interval_sec, failures=failures)


def run_healthcheck(sandbox: Sandbox, hc: HealthcheckConfig, ctx: CommandContext, trial_dir: Path, stage: str,
                    clock: Callable[[], float] = time.monotonic) -> int:
    """Check until the healthcheck passes (returns the number of checks) or fails (raises
    ``HealthcheckFailed`` with ``healthcheck.log`` as evidence)."""
    began, failures, checks = clock(), 0, 0
    log: list[str] = []
    while True:
        interrupts.check()
        at = clock() - began
        code, output = run_task_command(sandbox, ctx, hc.command, hc.timeout_sec, stage)
        checks += 1
        log.append(f"[{at:7.1f}s] exit {code if code is not None else f'none: no end within {hc.timeout_sec:g} s'}"
                   f"\n{output[-2000:]}")
        step = next_check(hc, code == 0, at, failures)
        if step.passed:
            return checks
        if step.failed:
            (trial_dir / LOG).write_text("\n".join(log) + "\n", encoding="utf-8", errors="backslashreplace")
            raise HealthcheckFailed(stage, f"[environment.healthcheck] failed {step.failures} time(s) in a row "
                                           f"after its start period ({checks} checks): {hc.command}", evidence=LOG)
        failures = step.failures
        interrupts.pause(step.wait_sec)
