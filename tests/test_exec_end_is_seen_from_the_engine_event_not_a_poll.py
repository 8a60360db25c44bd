"""tbflow found an exec's end (the agent's command, the judge) only by asking the engine, every
0.25 s for as long as an agent ran: ~4 Docker calls a second per trial for nothing, and a quick
command's end seen up to half its run late. The engine's ``exec_die`` event now wakes the poll
(tasks_lib/container/engine_events.py, ``ExecEnd``); the look at the exec stays the authority."""

from __future__ import annotations

import threading
import uuid

import pytest

from tasks_lib.container.engine_events import EXEC_ENDS_KEPT, EngineEvents


def _exec_die(exec_id: str, cid: str = "c1") -> dict:
    return {"Action": "exec_die", "id": cid, "Actor": {"ID": cid, "Attributes": {"execID": exec_id, "exitCode": "0"}}}


def _following() -> EngineEvents:
    record = EngineEvents()
    record._thread = threading.current_thread()  # as if it followed a stream: the events come by hand
    return record


def test_an_exec_end_reported_while_waiting_wakes_the_pause():
    record = _following()
    with record.exec_end("e1") as ended:
        assert ended.live
        threading.Timer(0.05, record._keep, [_exec_die("e1")]).start()
        ended.pause(3600)  # would hang the test without the event
    assert "e1" not in record._exec_waiters, "a finished wait is forgotten"


def test_an_exec_that_ended_before_the_wait_wakes_it_at_once():
    record = _following()
    record._keep(_exec_die("e2"))
    with record.exec_end("e2") as ended:
        ended.pause(3600)


def test_the_event_wakes_one_pause_only_so_a_look_that_still_says_running_is_no_busy_loop(monkeypatch):
    import tasks_lib.container.engine_events as engine_events

    slept: list[float] = []
    monkeypatch.setattr(engine_events.time, "sleep", slept.append)
    record = _following()
    record._keep(_exec_die("e3"))
    with record.exec_end("e3") as ended:
        ended.pause(3600)  # woken at once by the event
        assert slept == []
        ended.pause(0.5)  # the exec still looked running: this pause is time, not the spent event
        assert slept == [0.5]


def test_an_exec_die_is_not_kept_as_a_containers_evidence_and_old_ends_are_dropped():
    record = _following()
    record._keep({"Action": "start", "id": "c1", "Actor": {"ID": "c1", "Attributes": {}}})
    for i in range(EXEC_ENDS_KEPT + 10):
        record._keep(_exec_die(f"x{i}"))
    assert [e["Action"] for e in record.seen("c1") or []] == ["start"]
    assert len(record._exec_ended) == EXEC_ENDS_KEPT and "x0" not in record._exec_ended


def test_without_a_stream_the_pause_is_plain_time():
    with EngineEvents().exec_end("e4") as ended:
        assert not ended.live


@pytest.mark.docker
def test_the_engine_reports_a_trial_containers_exec_end_to_the_waiter(docker_ready):
    """The real engine's stream, filtered to tbflow's containers and kinds, carries ``exec_die``
    with the exec's id (an engine that did not would leave every wait on its slow poll)."""
    from tasks_lib.container.docker_client import LABEL_ROOT
    from tasks_lib.container.engine_events import ENGINE_EVENTS

    ENGINE_EVENTS.watch()
    box = docker_ready.containers.run("tbflow/base:bookworm", ["sleep", "infinity"], detach=True, init=True,
                                      network_mode="none", labels={LABEL_ROOT: "1", "tbflow.test": uuid.uuid4().hex})
    try:
        exec_id = docker_ready.api.exec_create(box.id, ["sh", "-c", "exit 7"])["Id"]
        with ENGINE_EVENTS.exec_end(exec_id) as ended:
            docker_ready.api.exec_start(exec_id)
            assert ended.woken is not None and ended.woken.wait(120), "no exec_die for the exec"
            assert ended.exit_code() == 7, "the engine's exec_die names the exit code (Docker 25 and later)"
        assert docker_ready.api.exec_inspect(exec_id)["ExitCode"] == 7
    finally:
        box.remove(force=True)


def test_the_events_exit_code_ends_a_wait_without_asking_the_engine_again():
    """Two ``exec_inspect`` calls an exec (the first look at a command just started, the last at its
    end) were ~3 Docker calls a trial for what the engine's ``exec_die`` already says."""
    record = _following()
    die = _exec_die("e5")
    die["Actor"]["Attributes"]["exitCode"] = "7"
    with record.exec_end("e5") as ended:
        assert ended.exit_code() is None
        record._keep(die)
        assert ended.exit_code() == 7


def test_an_event_without_an_exit_code_leaves_the_look_as_the_authority():
    record = _following()
    die = _exec_die("e6")
    del die["Actor"]["Attributes"]["exitCode"]  # an engine before Docker 25
    record._keep(die)
    with record.exec_end("e6") as ended:
        ended.pause(3600)  # still woken at once
        assert ended.exit_code() is None
