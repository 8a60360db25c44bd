"""The order trials are started in: longest expected first, by name, or shuffled with a seed.

A job ends when its last trial does. Started in name order, a long trial that sorts last starts
last and the job waits for it alone at the end; started longest first, it runs next to the short
ones (the classic LPT rule of list scheduling). A trial's expected duration comes from, in turn:

1. ``history``: the median of the latest run times of the same task and harness on this machine
   (``tasks_lib/job/trial_history.py``);
2. the task's ``[metadata]``: TB 2.1's ``estimated_duration_sec``, else TB 2.0's
   ``expert_time_estimate_min`` / ``junior_time_estimate_min`` (human minutes; capped at the agent
   timeout, which is as long as a trial's agent can take);
3. its agent timeout (times ``--timeout-multiplier``).

Order never changes what a trial does, only when it starts. Ties keep name order, so the order is
the same on every run with the same history.
"""

from __future__ import annotations

import random

from tasks_lib.records.record_models import ORDER_MODES, OrderMode, QueuedTrial, TrialOrder, TrialSpec
from tasks_lib.task.task_model import Task

__all__ = ["ORDER_MODES", "OrderMode", "describe_order", "expected_duration", "order_trials"]


def describe_order(order: TrialOrder, limit: int | None = None) -> list[str]:
    """The start order as printed at the start of a job (the first ``limit`` trials)."""
    how = {"expected": "longest expected first", "name": "by name",
           "random": f"random, seed {order.seed}"}[order.mode]
    lines = [f"start order ({how}):"]
    shown = order.trials if limit is None else order.trials[:limit]
    for i, q in enumerate(shown, 1):
        digits = 0 if q.expected_sec >= 10 else 1
        lines.append(f"  {i}. {q.trial_id}  ~{q.expected_sec:.{digits}f}s ({q.source})")
    if len(shown) < len(order.trials):
        lines.append(f"  ... {len(order.trials) - len(shown)} more (all in job.json)")
    return lines


def _positive(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return float(value)


def expected_duration(task: Task, harness: str, multiplier: float,
                      history: dict[tuple[str, str], float]) -> tuple[float, str]:
    """A trial's expected duration in seconds and where that number came from."""
    if (task.name, harness) in history:
        return history[(task.name, harness)], "history"
    agent_limit = task.config.agent.timeout_sec * multiplier
    meta = task.config.metadata
    if (sec := _positive(meta.get("estimated_duration_sec"))) is not None:
        return min(sec, agent_limit), "metadata estimated_duration_sec"
    for key in ("expert_time_estimate_min", "junior_time_estimate_min"):
        if (minutes := _positive(meta.get(key))) is not None:
            return min(minutes * 60, agent_limit), f"metadata {key}"
    return agent_limit, "agent timeout"


def order_trials(specs: list[TrialSpec], tasks: dict[str, Task], mode: OrderMode, seed: int | None,
                 history: dict[tuple[str, str], float]) -> tuple[list[TrialSpec], TrialOrder]:
    """``specs`` (in name order) in the order they should start, and that order described."""
    expected = {s.trial_id: expected_duration(tasks[s.task_name], s.harness, s.timeout_multiplier, history)
                for s in specs}
    ordered = list(specs)
    if mode == "expected":
        ordered.sort(key=lambda s: -expected[s.trial_id][0])  # stable: ties stay in name order
    elif mode == "random":
        random.Random(seed).shuffle(ordered)
    queue = [QueuedTrial(trial_id=s.trial_id, expected_sec=round(expected[s.trial_id][0], 1),
                         source=expected[s.trial_id][1]) for s in ordered]
    return ordered, TrialOrder(mode=mode, seed=seed if mode == "random" else None, trials=queue)
