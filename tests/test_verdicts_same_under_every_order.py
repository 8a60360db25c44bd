"""Start order changes when a trial runs, never its verdict: a small mixed dataset (solvable,
broken verifier, broken Dockerfile) gets the same verdicts with --order expected, name and
random, and they are the right ones."""

import pytest

from task_factory import make_task

pytestmark = pytest.mark.docker

EXPECTED = {
    "solvable.oracle.1": ("scored", 1.0, None),
    "solvable.nop.1": ("scored", 0.0, None),
    "no-reward.oracle.1": ("invalid", None, "verifier"),
    "no-reward.nop.1": ("invalid", None, "verifier"),
    "bad-build.oracle.1": ("invalid", None, "environment"),
    "bad-build.nop.1": ("invalid", None, "environment"),
}


@pytest.fixture(autouse=True)
def _own_history(tmp_path, monkeypatch):
    monkeypatch.setenv("TBFLOW_HISTORY", str(tmp_path / "trial-history.sqlite"))


def test_every_order_gives_the_same_right_verdicts(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "solvable", solve="echo ok > /app/out.txt\n", check="[ -f /app/out.txt ]",
              extra_toml="\n[metadata]\nestimated_duration_sec = 30\n")
    make_task(ds, "no-reward", test_sh="#!/bin/bash\necho no reward written\n")
    failing = f"FROM tbflow/base:bookworm\nCOPY order-marker-{tmp_path.name} /nowhere\n"  # no such file
    make_task(ds, "bad-build", dockerfile=failing,
              extra_toml="\n[metadata]\nexpert_time_estimate_min = 0.2\n")
    verdicts = {}
    for order, seed in (("expected", None), ("name", None), ("random", 7)):
        result = run_job(ds, job_name=f"job-{order}", harnesses=["oracle", "nop"], order=order, order_seed=seed,
                         concurrency=2, env_retries=0)
        verdicts[order] = {r.trial_id: (r.validity.status, r.validity.reward, r.validity.kind)
                           for r in result.records}
        for r in result.records:
            if r.spec.task_name == "bad-build":  # each trial that needed the failed image has its log
                assert r.validity.evidence == "build.log"
                log = tmp_path / "jobs" / f"job-{order}" / "trials" / r.trial_id / "build.log"
                assert f"order-marker-{tmp_path.name}" in log.read_text()
    assert verdicts["expected"] == EXPECTED
    assert verdicts["name"] == EXPECTED
    assert verdicts["random"] == EXPECTED
