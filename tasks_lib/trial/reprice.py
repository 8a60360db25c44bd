"""Pricing a finished job after the fact: ``tbflow report JOB --prices FILE``.

Why it can: a trial's cost is computed on the host from the gateway's recording of its model
exchange (``model-exchange.jsonl``) and a price table, never from anything the container kept, so
the same computation runs again later with another table: for a job run without ``--prices``
(a model tbflow's default table lacks), or when prices were wrong. Each model trial's trajectory
and cost fields are rebuilt exactly as the trial stage builds them (``trajectory_stage``), and the
table becomes the job's own (``prices.json``), so a later ``tbflow resume`` prices alike. Verdicts
are never touched: a price is a view of the record, not evidence.
"""

from __future__ import annotations

from pathlib import Path

from tasks_lib.gateway.exchange.exchange_model import EXCHANGE_FILE
from tasks_lib.pricing.price_table import load_price_table
from tasks_lib.store.job_store import JobStore
from tasks_lib.trial.trajectory_stage import keep_job_prices, with_trajectory


def reprice_job(job_dir: Path, table: Path) -> int:
    """Price every recorded model trial of ``job_dir`` with ``table`` over tbflow's default table;
    the number of trial records whose cost or trajectory changed. ``InputError`` for a bad table
    (before anything is written)."""
    load_price_table(table)
    keep_job_prices(job_dir, table)
    store = JobStore(job_dir)
    changed = 0
    for record in store.trial_records():
        trial_dir = store.trial_dir(record.trial_id)
        if record.agent is None or not (trial_dir / EXCHANGE_FILE).is_file():
            continue
        agent = with_trajectory(record.agent, record.spec, record.harness_version, trial_dir, job_dir)
        if agent != record.agent:
            store.write_trial(record.model_copy(update={"agent": agent}))
            changed += 1
    return changed
