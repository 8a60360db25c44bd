"""The trial expected to take longest starts first; ``--order name`` and history change that as
documented. Asserted on the trials' recorded start timestamps, never on how long anything took."""

import json

import pytest

from task_factory import make_task

pytestmark = pytest.mark.docker

PRESENT_IMAGE = 'docker_image = "tbflow/base:bookworm"\n'  # no build, so only the order decides


def _task(ds, name, *, estimate=None, solve="true\n"):
    meta = f"\n[metadata]\nestimated_duration_sec = {estimate}\n" if estimate is not None else ""
    make_task(ds, name, solve=solve, extra_toml=PRESENT_IMAGE + meta)


def _started_order(result) -> list[str]:
    return [r.trial_id for r in sorted(result.records, key=lambda r: r.started_at)]


def _planned(job_dir) -> list[dict]:
    return json.loads((job_dir / "job.json").read_text())["order"]["trials"]


@pytest.fixture(autouse=True)
def _own_history(tmp_path, monkeypatch):
    monkeypatch.setenv("TBFLOW_HISTORY", str(tmp_path / "trial-history.sqlite"))


def test_metadata_estimate_orders_the_queue_longest_first(run_job, tmp_path):
    ds = tmp_path / "ds"
    _task(ds, "a-short", estimate=5)
    _task(ds, "m-medium", estimate=20)
    _task(ds, "z-long", estimate=50)
    expected = run_job(ds, job_name="expected")
    assert _started_order(expected) == ["z-long.oracle.1", "m-medium.oracle.1", "a-short.oracle.1"]
    planned = _planned(tmp_path / "jobs" / "expected")
    assert [q["trial_id"] for q in planned] == _started_order(expected)
    assert planned[0] == {"trial_id": "z-long.oracle.1", "expected_sec": 50.0,
                          "source": "metadata estimated_duration_sec"}

    by_name = run_job(ds, job_name="by-name", order="name")
    assert _started_order(by_name) == ["a-short.oracle.1", "m-medium.oracle.1", "z-long.oracle.1"]


def test_history_of_earlier_trials_orders_the_next_job(run_job, tmp_path):
    ds = tmp_path / "ds"
    for name in ("a", "b", "c"):
        _task(ds, name)  # no metadata: every trial expects its agent timeout, so name order
    _task(ds, "d-slow", solve="sleep 10\n")  # longer than any load-made difference in the others' overhead
    first = run_job(ds, job_name="first")
    assert _started_order(first) == ["a.oracle.1", "b.oracle.1", "c.oracle.1", "d-slow.oracle.1"]
    assert {q["source"] for q in _planned(tmp_path / "jobs" / "first")} == {"agent timeout"}

    second = run_job(ds, job_name="second")
    assert _started_order(second)[0] == "d-slow.oracle.1"
    planned = _planned(tmp_path / "jobs" / "second")
    assert planned[0]["trial_id"] == "d-slow.oracle.1" and planned[0]["source"] == "history"
    slow = next(r for r in first.records if r.spec.task_name == "d-slow")
    assert planned[0]["expected_sec"] == pytest.approx(slow.duration_sec, abs=0.1)


def test_pool_starts_the_longest_trials_first_at_concurrency_2(run_job, tmp_path):
    ds = tmp_path / "ds"
    for i, estimate in enumerate((3, 9, 4, 8, 2, 7)):
        _task(ds, f"t{i}", estimate=estimate)
    result = run_job(ds, concurrency=2)
    started = _started_order(result)
    # the two slots take the two longest (any other trial starts only after one of them ended)
    assert set(started[:2]) == {"t1.oracle.1", "t3.oracle.1"}
    assert [q["trial_id"] for q in _planned(tmp_path / "jobs" / "job")] == [
        "t1.oracle.1", "t3.oracle.1", "t5.oracle.1", "t2.oracle.1", "t0.oracle.1", "t4.oracle.1"]
