"""An agent whose children are OOM-killed by the thousand must not push its container's ``start``
out of tbflow's record of engine events (tasks_lib/container/engine_events.py): without it, the
agent killing its own PID 1 afterwards was booked as an environment failure and run three times."""

from __future__ import annotations

from tasks_lib.container.engine_events import PER_ACTION, EngineEvents


def _event(action: str, n: int, cid: str = "c1") -> dict:
    return {"Action": action, "id": cid, "time": 1_700_000_000 + n // 10**6, "timeNano": 1_700_000_000 * 10**9 + n,
            "Actor": {"ID": cid, "Attributes": {"n": str(n)}}}


def _record(events: list[dict]) -> EngineEvents:
    record = EngineEvents()
    for e in events:
        record._keep(e)
    return record


def test_5000_oom_events_do_not_push_start_and_die_out():
    events = [_event("create", 0), _event("start", 1), *(_event("oom", 2 + i) for i in range(5000)), _event("die", 6000)]
    record = _record(events)
    seen = record.seen("c1")
    assert seen is not None, "the record forgot the container's start"
    actions = [e["Action"] for e in seen]
    assert actions[:3] == ["create", "start", "oom"] and actions[-1] == "die", actions[:5] + actions[-3:]
    assert len(seen) <= 2 * PER_ACTION + 4, len(seen)
    assert [e["timeNano"] for e in seen] == sorted(e["timeNano"] for e in seen), "not in time order"
    assert record.dropped("c1") == {"oom": 5000 - 1 - PER_ACTION}
    assert seen[-2]["timeNano"] == events[-2]["timeNano"], "the latest oom events are the ones kept"


def test_a_restart_loop_keeps_the_first_start_and_the_latest_lifecycle_events():
    events = [_event("start", 0)]
    for i in range(1, 1000):
        events += [_event("die", 10 * i), _event("restart", 10 * i + 1), _event("start", 10 * i + 2)]
    events.append(_event("kill", 20_000))
    seen = _record(events).seen("c1")
    assert seen is not None and seen[0]["timeNano"] == events[0]["timeNano"]
    assert seen[-1]["Action"] == "kill" and seen[-2] == events[-2]
    assert len(seen) <= 3 * (PER_ACTION + 1) + 1


def test_events_delivered_twice_after_the_stream_reconnects_are_kept_once():
    events = [_event("start", 1), _event("oom", 2), _event("die", 3)]
    record = _record(events + [dict(e) for e in events])
    assert [e["Action"] for e in record.seen("c1") or []] == ["start", "oom", "die"]
    assert record.dropped("c1") == {}


def test_a_destroyed_container_is_forgotten_and_other_containers_are_apart():
    record = _record([_event("start", 1), _event("start", 2, cid="c2"), _event("destroy", 3)])
    assert record.seen("c1") is None
    assert [e["id"] for e in record.seen("c2") or []] == ["c2"]
