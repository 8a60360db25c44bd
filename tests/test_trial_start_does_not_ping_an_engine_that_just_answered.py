"""Every trial pinged the engine before its first stage (1.1 of ~15 Docker calls a trial, at 4
trials at a time one every ~0.2 s). A trial about to start now takes an answer of the last second
(``wait_for_engine(recent_ok=True)``); a failed ping, and a trial that failed on the engine, always
ask again, so an outage is still waited out (tests/test_engine_restart_mid_job_retries_in_flight_trials.py)."""

from __future__ import annotations

import docker.errors

import tasks_lib.container.docker_client as docker_client


class _Engine:
    def __init__(self) -> None:
        self.pings = 0
        self.down = False

    def ping(self) -> bool:
        self.pings += 1
        if self.down:
            raise docker.errors.APIError("engine restarting")
        return True


def _engine(monkeypatch) -> _Engine:
    engine = _Engine()
    monkeypatch.setattr(docker_client, "get_client", lambda: engine)
    monkeypatch.setattr(docker_client, "_answered_at", float("-inf"))
    monkeypatch.setattr(docker_client, "_down_since", None)
    return engine


def test_a_trial_start_right_after_an_answer_pings_no_more(monkeypatch):
    engine = _engine(monkeypatch)
    assert docker_client.wait_for_engine(recent_ok=True)
    assert docker_client.wait_for_engine(recent_ok=True)
    assert engine.pings == 1


def test_an_old_answer_is_asked_again(monkeypatch):
    engine = _engine(monkeypatch)
    assert docker_client.wait_for_engine(recent_ok=True)
    monkeypatch.setattr(docker_client, "_answered_at", docker_client._answered_at - docker_client.ANSWER_FRESH_SEC)
    assert docker_client.wait_for_engine(recent_ok=True)
    assert engine.pings == 2


def test_after_a_trial_failed_on_the_engine_it_is_always_asked(monkeypatch):
    engine = _engine(monkeypatch)
    assert docker_client.wait_for_engine(recent_ok=True)
    assert docker_client.wait_for_engine()  # the retry path of a failed trial
    assert engine.pings == 2


def test_a_failed_ping_forgets_the_last_answer(monkeypatch):
    engine = _engine(monkeypatch)
    assert docker_client.wait_for_engine(recent_ok=True)
    engine.down = True
    assert not docker_client.wait_for_engine(max_wait=0, poll=0)
    engine.down = False
    assert docker_client.wait_for_engine(recent_ok=True)
    assert engine.pings == 3, "the trial after an outage asks the engine, it does not take the old answer"
