"""How the suite's tests are spread over pytest-xdist workers (``--dist loadgroup``).

Two rules, applied in ``conftest.pytest_collection_modifyitems`` before xdist reads the groups:

- **A module-scoped fixture runs once.** xdist runs a module fixture once per worker that runs any
  test of the module, so the hostile-agent job (a minute of containers) ran on three workers at
  once. Tests that use a module-scoped fixture of their module share one xdist group.
- **The longest tests start first.** xdist hands work out in collection order (with
  ``--no-loadscope-reorder``; by default it puts the groups with the most tests first), so a
  four-minute test collected late becomes the run's tail. ``STARTED_FIRST`` lists the test files
  that take a minute or more on a loaded worker (bench/RESULTS.md, "Test suite on a clean clone"),
  longest first; everything else keeps its order.
"""

from __future__ import annotations

from pathlib import PurePath

#: test files of a minute or more under 4 workers, longest first (the durations of a suite run)
STARTED_FIRST = (
    "test_scored_when_gateway_saw_tokens_but_cli_killed.py",
    "test_job_over_two_workers_survives_a_lost_worker.py",
    "test_persistent_model_error_ends_within_a_minute.py",
    "test_fresh_install.py",
    "test_model_key_from_a_secret_block_reaches_no_parameter_log_or_record.py",
    "test_nightly_deployment_runs_each_night_as_its_own_job.py",
    "test_deployment_documented_commands_complete_a_run.py",
    "test_cli_harnesses_end_to_end.py",
    "test_hostile_agent_cannot_reach_the_judge.py",
    "test_shard_that_keeps_crashing_rerun_at_most_n_times.py",
    "test_shards_share_job_through_s3_store.py",
    "test_job_in_s3_store_resumed_elsewhere_keeps_records.py",
    "test_kill_9_leaves_no_prefect_server.py",
    "test_refused_shard_is_not_rerun.py",
    "test_example_plugin_runs_through_a_deployment.py",
    "test_declared_clis_end_to_end.py",
    "test_job_with_invalid_trials_is_not_green_and_alerts.py",
    "test_pid_1_killed_after_hundreds_of_oom_kills_is_scored_zero.py",
)


def start_rank(path: str) -> int:
    """Where a test of file ``path`` starts: its place in ``STARTED_FIRST``, the rest after."""
    name = PurePath(path).name
    return STARTED_FIRST.index(name) if name in STARTED_FIRST else len(STARTED_FIRST)


def module_fixture_group(item) -> str | None:
    """The xdist group of a test that uses a module-scoped fixture defined in its own module
    (one per module), else None."""
    info = getattr(item, "_fixtureinfo", None)
    module = getattr(item, "module", None)
    if info is None or module is None:
        return None
    for defs in info.name2fixturedefs.values():
        if defs and defs[-1].scope == "module" and getattr(defs[-1], "baseid", "") == item.nodeid.split("::")[0]:
            return "module-" + PurePath(item.nodeid.split("::")[0]).stem
    return None
