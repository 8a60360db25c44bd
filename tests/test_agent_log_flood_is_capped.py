"""An agent that prints without end (or writes a huge file into /logs/agent) left a trial dir as
big as its output, downloaded through a temp file of the same size. Every log file is now cut
at ``--max-log-mb`` while it streams out of the container; the cut is noted in the record and
the report, and the trial is scored as usual."""

import pytest

from task_factory import make_task, record_of

MIB = 1024 * 1024


@pytest.mark.docker
def test_log_files_cut_at_max_log_mb(run_job, tmp_path):
    ds = tmp_path / "ds"
    flood = "head -c 12582912 /dev/zero | tr '\\0' 'x'\nhead -c 3145728 /dev/zero > /logs/agent/dump.bin\n"
    make_task(ds, "flood", solve=flood + "echo solved > /app/done.txt\n", check="[ -f /app/done.txt ]")
    result = run_job(ds, harnesses=["oracle"], max_log_mb=2)
    rec = record_of(result, "flood", "oracle")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert rec.spec.max_log_bytes == 2 * MIB
    cut = {c.path: (c.size_bytes, c.kept_bytes) for c in rec.logs.cut}
    assert cut == {"agent/oracle.txt": (12 * MIB, 2 * MIB), "agent/dump.bin": (3 * MIB, 2 * MIB)}, cut
    agent = tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "agent"
    assert (agent / "oracle.txt").stat().st_size == 2 * MIB
    assert (agent / "oracle.txt").read_bytes()[:10] == b"x" * 10  # the start is kept
    assert (agent / "dump.bin").stat().st_size == 2 * MIB
    report = (tmp_path / "jobs" / "job" / "report.md").read_text()
    assert "agent/oracle.txt cut at 2.0 MiB of 12.0 MiB" in report
