"""The agent's logs come down with the verifier's in one download of /logs; when that download
is refused (test.sh left a link pointing out of /logs/verifier) the trial is invalid and the
agent's logs are still kept as evidence, and the trial is not retried (a new try would be refused
the same way). A hostile link elsewhere under /logs, outside the two
log dirs tbflow keeps, changes nothing."""

from __future__ import annotations

from task_factory import make_task, record_of


def test_refused_verifier_download_keeps_agent_logs(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "leaky-verifier", solve="echo solved-it\n",
              test_sh="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\nln -s /etc/passwd /logs/verifier/leak\n")
    make_task(ds, "link-beside-logs", solve="echo solved-too\nln -s /etc /logs/elsewhere\n")
    result = run_job(ds)

    rec = record_of(result, "leaky-verifier")
    assert rec.validity.status == "invalid" and rec.validity.kind == "environment", rec.validity
    assert rec.error is not None and "points outside logs/verifier" in rec.error.message, rec.error
    assert rec.env_retry_errors == [], "a refused archive is deterministic: it must not be retried"
    trial = tmp_path / "jobs/job/trials" / rec.trial_id
    assert "solved-it" in (trial / "agent/oracle.txt").read_text()
    assert not (trial / "verifier/leak").exists()

    rec = record_of(result, "link-beside-logs")
    assert rec.validity.status == "scored" and rec.validity.reward == 1.0, rec.validity
    trial = tmp_path / "jobs/job/trials" / rec.trial_id
    assert "solved-too" in (trial / "agent/oracle.txt").read_text()
    assert not (trial / "elsewhere").exists()
