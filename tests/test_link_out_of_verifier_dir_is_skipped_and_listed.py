"""The agent's logs come down with the verifier's in one streamed download of /logs. A link that
test.sh leaves pointing out of /logs/verifier is not copied: it is skipped and listed in the
record (``logs.skipped``), and the trial keeps the reward test.sh reported (the reward comes from
the verifier wrapper's own report, not from the downloaded files). A hostile link elsewhere under
/logs, outside the two log dirs tbflow keeps, changes nothing."""

from __future__ import annotations

from task_factory import make_task, record_of


def test_link_out_of_verifier_dir_is_skipped_and_listed(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "leaky-verifier", solve="echo solved-it\n",
              test_sh="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\nln -s /etc/passwd /logs/verifier/leak\n")
    make_task(ds, "link-beside-logs", solve="echo solved-too\nln -s /etc /logs/elsewhere\n")
    result = run_job(ds)

    rec = record_of(result, "leaky-verifier")
    assert rec.validity.status == "scored" and rec.validity.reward == 1.0, rec.validity
    assert rec.logs is not None and [s.path for s in rec.logs.skipped] == ["verifier/leak"], rec.logs
    assert "leaves its log dir" in rec.logs.skipped[0].reason, rec.logs
    trial = tmp_path / "jobs/job/trials" / rec.trial_id
    assert "solved-it" in (trial / "agent/oracle.txt").read_text()
    assert not (trial / "verifier/leak").exists() and not (trial / "verifier/leak").is_symlink()
    assert (trial / "verifier/reward.txt").read_text().strip() == "1"

    rec = record_of(result, "link-beside-logs")
    assert rec.validity.status == "scored" and rec.validity.reward == 1.0, rec.validity
    assert rec.logs is not None and rec.logs.skipped == [], rec.logs
    trial = tmp_path / "jobs/job/trials" / rec.trial_id
    assert "solved-too" in (trial / "agent/oracle.txt").read_text()
    assert not (trial / "elsewhere").exists()
