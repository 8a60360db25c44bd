"""A trial's expected duration comes from history, else the task's metadata (TB 2.1's
estimated_duration_sec, else TB 2.0's expert/junior minutes, capped at the agent timeout), else
its agent timeout; a value that is not a positive number is skipped, and ties keep name order."""

from pathlib import Path

from tasks_lib.records.record_models import TrialSpec
from tasks_lib.task.task_model import Task, TaskConfig
from tasks_lib.job.trial_order import expected_duration, order_trials


def _task(name: str, metadata: dict, timeout: float = 600) -> Task:
    config = TaskConfig.model_validate({"metadata": metadata, "agent": {"timeout_sec": timeout}})
    return Task(name=name, path=Path("/nonexistent") / name, config=config, instruction="", has_solution=True)


def test_each_source_in_turn():
    history = {("t", "oracle"): 42.0}
    meta = {"estimated_duration_sec": 300, "expert_time_estimate_min": 3, "junior_time_estimate_min": 9}
    assert expected_duration(_task("t", meta), "oracle", 1.0, history) == (42.0, "history")
    assert expected_duration(_task("t", meta), "nop", 1.0, history) == (300.0, "metadata estimated_duration_sec")
    del meta["estimated_duration_sec"]
    assert expected_duration(_task("t", meta), "nop", 1.0, {}) == (180.0, "metadata expert_time_estimate_min")
    assert expected_duration(_task("t", {"junior_time_estimate_min": 2}), "nop", 1.0, {}) == (
        120.0, "metadata junior_time_estimate_min")
    assert expected_duration(_task("t", {}, timeout=90), "nop", 2.0, {}) == (180.0, "agent timeout")


def test_human_estimates_are_capped_at_the_agent_timeout_and_bad_values_skipped():
    assert expected_duration(_task("t", {"expert_time_estimate_min": 120}, timeout=900), "oracle", 1.0, {}) == (
        900.0, "metadata expert_time_estimate_min")
    for bad in ("soon", -5, 0, True, [1]):
        assert expected_duration(_task("t", {"estimated_duration_sec": bad}, timeout=60), "oracle", 1.0, {}) == (
            60.0, "agent timeout")


def test_ties_keep_name_order_and_random_is_reproducible_from_its_seed():
    tasks = {n: _task(n, {"estimated_duration_sec": s}) for n, s in (("a", 5), ("b", 9), ("c", 5), ("d", 9))}
    specs = [TrialSpec(job_id="j", trial_id=f"{n}.oracle.1", task_name=n, task_path="/x", harness="oracle",
                       attempt=1) for n in sorted(tasks)]
    ordered, order = order_trials(specs, tasks, "expected", None, {})
    assert [s.task_name for s in ordered] == ["b", "d", "a", "c"]
    assert [q.trial_id for q in order.trials] == [s.trial_id for s in ordered]
    by_name, _ = order_trials(specs, tasks, "name", None, {})
    assert [s.task_name for s in by_name] == ["a", "b", "c", "d"]
    first, recorded = order_trials(specs, tasks, "random", 1234, {})
    again, _ = order_trials(specs, tasks, "random", 1234, {})
    assert recorded.seed == 1234 and [s.trial_id for s in first] == [s.trial_id for s in again]
    assert sorted(s.trial_id for s in first) == sorted(s.trial_id for s in specs)
