"""Odd entries an agent leaves in /logs/agent — a symlink leaving the dir (``ln -s /app
/logs/agent/ws``), a link into the verifier's dir, a FIFO, a device — made the one download of
/logs fail and the trial ``invalid: environment``, throwing away a valid reward. Now they are
skipped and listed in the record and the report; the reward and the other logs still count."""

import pytest

from task_factory import make_task, record_of

PLANT = """\
ln -s /app /logs/agent/ws
ln -s ../verifier/reward.txt /logs/agent/forged
mkfifo /logs/agent/fifo
mknod /logs/agent/null c 1 3
echo kept > /logs/agent/notes.txt
ln -s notes.txt /logs/agent/notes-link
echo solved > /app/done.txt
"""


@pytest.mark.docker
def test_unsafe_agent_log_entries_are_skipped_and_listed(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "plant", solve=PLANT, check="[ \"$(cat /app/done.txt)\" = solved ]")
    result = run_job(ds, harnesses=["oracle"])
    rec = record_of(result, "plant", "oracle")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (rec.validity, rec.error)
    skipped = {s.path: s.reason for s in rec.logs.skipped}
    assert sorted(skipped) == ["agent/fifo", "agent/forged", "agent/null", "agent/ws"], skipped
    assert "/app" in skipped["agent/ws"]
    trial = tmp_path / "jobs" / "job" / "trials" / rec.trial_id
    assert (trial / "agent" / "notes.txt").read_text() == "kept\n"
    assert (trial / "agent" / "notes-link").resolve() == (trial / "agent" / "notes.txt").resolve()
    assert (trial / "agent" / "oracle.txt").is_file()
    assert not (trial / "agent" / "ws").exists() and not (trial / "agent" / "forged").exists()
    report = (tmp_path / "jobs" / "job" / "report.md").read_text()
    assert "agent/ws skipped" in report and "agent/fifo skipped" in report
