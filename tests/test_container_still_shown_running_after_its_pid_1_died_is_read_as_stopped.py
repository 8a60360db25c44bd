"""An agent whose container was OOM-killed at the task's limit was once flagged "tbflow's judge was
killed (exit 126)" instead of "the container was OOM-killed at the task's memory limit" (CI, after an
exec's end came to be seen from the engine's event): the verifier's exec failed because the
container's PID 1 had just died, and the engine still showed the container running for the moment
it takes to note the exit. A container read after one of tbflow's execs failed is now read again
until it stops, for up to ``SETTLE_SEC`` (tasks_lib/trial/container_health.py).

The engine's lag is the injected fault: the first looks say running, as the engine's did."""

from __future__ import annotations

import pytest

import tasks_lib.trial.container_health as health


class _LaggingEngine:
    """``inspect_container`` that shows the container running for its first ``lag`` looks."""

    def __init__(self, lag: int) -> None:
        self.lag, self.looks = lag, 0

    def inspect_container(self, container: str) -> dict:
        self.looks += 1
        running = self.looks <= self.lag
        return {"Id": container, "State": {"Running": running, "ExitCode": 0 if running else 137,
                                           "OOMKilled": not running}}


@pytest.fixture
def engine(monkeypatch):
    def install(lag: int) -> _LaggingEngine:
        fake = _LaggingEngine(lag)
        monkeypatch.setattr(health, "get_client", lambda: type("Client", (), {"api": fake})())
        monkeypatch.setattr(health, "SETTLE_STEP_SEC", 0)
        return fake
    return install


def test_a_container_shown_running_for_a_moment_after_its_exec_failed_reads_as_stopped(engine):
    fake = engine(lag=3)
    assert health.container_running("c1") is False
    assert fake.looks == 4


def test_a_container_that_keeps_running_reads_as_running_once_the_settle_time_is_over(engine, monkeypatch):
    monkeypatch.setattr(health, "SETTLE_SEC", 0)  # no wait: one look, as before
    fake = engine(lag=10**9)
    assert health.container_running("c1") is True
    assert fake.looks == 1
