"""After the agent stage: the trial's ATIF trajectory and cost, written on the host.

Why here and not in the container: the trajectory is built from the gateway's recording of the
trial's model exchange (``model-exchange.jsonl`` in the trial's host directory), which the agent
never sees, and written beside it as ``trajectory.json``: outside ``agent/`` and ``verifier/``
(what comes down from the container), so the agent can neither forge nor overwrite it. Runs for
every model harness: built-in CLIs, declared and plug-in harnesses, host-side agents.

Prices: the job's ``prices.json`` (``tbflow run --prices``, copied into the job directory so every
worker of the job reads the same table) laid over tbflow's pinned default table.

A trajectory that cannot be built is a note on the record (``trajectory_problem``), never the
trial's verdict: the agent's requests are the agent's, and a transcript is a view of them.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from tasks_lib.gateway.exchange.exchange_model import EXCHANGE_FILE
from tasks_lib.gateway.exchange.exchange_reader import read_exchange
from tasks_lib.pricing.price_table import PriceTable, default_price_table, load_price_table
from tasks_lib.records.record_models import AgentOutcome, TrialSpec
from tasks_lib.store.job_store import write_atomic
from tasks_lib.store.remote_store import PRICES_FILE as JOB_PRICES_FILE
from tasks_lib.trajectory.atif_models import Agent
from tasks_lib.trajectory.build_trajectory import CALLS_UNPRICED, COST_PRICED, build_trajectory

TRAJECTORY_FILE = "trajectory.json"

_log = logging.getLogger(__name__)


def job_prices(job_dir: Path) -> PriceTable:
    """The job's price table over the default one (the job's entries win)."""
    table = default_price_table()
    own = job_dir / JOB_PRICES_FILE
    return load_price_table(own).over(table) if own.is_file() else table


def keep_job_prices(job_dir: Path, table: Path) -> None:
    """Copy the user's price table into the job directory, where every worker of the job finds it."""
    prices = {name: {k: v for k, v in price.model_dump(exclude_none=True).items() if k != "tiers" or v}
              for name, price in load_price_table(table).prices.items()}  # no empty tiers: the user's table as given
    write_atomic(job_dir / JOB_PRICES_FILE, json.dumps(prices, indent=1, sort_keys=True) + "\n")


def with_trajectory(outcome: AgentOutcome, spec: TrialSpec, harness_version: str, trial_dir: Path,
                    job_dir: Path) -> AgentOutcome:
    """``outcome`` with the trajectory written (its path) and the trial's cost, when the exchange was recorded."""
    exchange = trial_dir / EXCHANGE_FILE
    if not exchange.is_file():
        return outcome
    agent = Agent(name=spec.harness, version=harness_version or "unknown", model_name=spec.model,
                  extra={"recorded_by": "tbflow gateway"})
    try:
        trajectory = build_trajectory(read_exchange(exchange), agent, outcome.gateway_usage, job_prices(job_dir),
                                      session_id=spec.trial_id)
        if trajectory is None:
            return outcome
        write_atomic(trial_dir / TRAJECTORY_FILE, trajectory.model_dump_json(indent=1, exclude_none=True) + "\n")
    except Exception as exc:  # noqa: BLE001 (a transcript is a view: it never decides the trial)
        _log.exception("trial %s: no trajectory", spec.trial_id)
        return outcome.model_copy(update={"trajectory_problem": f"{type(exc).__name__}: {exc}"[:500]})
    final = trajectory.final_metrics
    extra = (final.extra if final else None) or {}
    return outcome.model_copy(update={
        "trajectory": TRAJECTORY_FILE, "trajectory_problem": None,
        "cost_usd": final.total_cost_usd if final else None,
        "cost_priced_usd": extra.get(COST_PRICED), "calls_unpriced": extra.get(CALLS_UNPRICED) or 0})
