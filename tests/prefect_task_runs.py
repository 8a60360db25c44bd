"""The task runs of a flow run as the Prefect UI reads them, once the server has them all final."""

from __future__ import annotations

import time


def final_task_runs(client, flow_run_id, at_least: int) -> list:
    """The task runs of ``flow_run_id`` once there are ``at_least`` of them, all in a final state:
    the server records task-run states from events, a moment after the flow returned (waits at
    most 2 minutes, then returns what it has, for the caller's assertion to show)."""
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    runs: list = []
    for _ in range(240):
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
        if len(runs) >= at_least and all(t.state and t.state.is_final() for t in runs):
            break
        time.sleep(0.5)
    return runs
