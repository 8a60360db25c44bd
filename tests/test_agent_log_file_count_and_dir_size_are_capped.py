"""Each log file was cut at ``--max-log-mb``, but nothing bounded how many files an agent leaves
in /logs/agent: ten thousand small files, or a hundred capped ones, all landed in the trial dir,
and every odd entry (a FIFO) was listed one by one in trial.json. Now each log dir has its own
budget of entries and bytes (the rest is counted in ``logs.dropped``), the lists in the record
are bounded, the verifier's output still comes out whole, and the trial is scored as usual."""

import pytest

from task_factory import make_task, record_of

from tasks_lib.container.log_download import MAX_FILES_PER_DIR
from tasks_lib.container.container_outcomes import LISTED_LOG_ENTRIES

MIB = 1024 * 1024
EXTRA = 40


@pytest.mark.docker
def test_many_log_files_counted_not_copied(run_job, tmp_path):
    ds = tmp_path / "ds"
    many = MAX_FILES_PER_DIR + EXTRA
    solve = (f"mkdir -p /logs/agent/many && cd /logs/agent/many && seq 1 {many} | xargs touch\n"
             f"mkdir -p /logs/agent/fifos && for i in $(seq 1 {LISTED_LOG_ENTRIES + 7}); do "
             "mkfifo /logs/agent/fifos/p$i; done\n"
             "echo solved > /app/done.txt\n")
    make_task(ds, "many-files", solve=solve, check="[ -f /app/done.txt ]")
    rec = record_of(run_job(ds, harnesses=["oracle"]), "many-files", "oracle")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    dropped = {d.dir: d for d in rec.logs.dropped}
    assert set(dropped) == {"agent"}, rec.logs.dropped
    trial = tmp_path / "jobs" / "job" / "trials" / rec.trial_id
    copied = sum(1 for _ in (trial / "agent").rglob("*"))
    assert copied <= MAX_FILES_PER_DIR
    assert dropped["agent"].entries >= EXTRA and "entry budget" in dropped["agent"].reason
    assert len(rec.logs.skipped) + rec.logs.skipped_unlisted <= LISTED_LOG_ENTRIES + 7
    assert len(rec.logs.skipped) <= LISTED_LOG_ENTRIES
    assert (trial / "verifier" / "reward.txt").read_text().strip() == "1"  # its own budget
    report = (tmp_path / "jobs" / "job" / "report.md").read_text()
    assert "not copied: agent/ held more than its entry budget" in report, report[report.find("## Trial notes"):]


@pytest.mark.docker
def test_many_capped_files_stop_at_the_dir_byte_budget(run_job, tmp_path):
    ds = tmp_path / "ds"
    solve = ("for i in $(seq 1 10); do head -c 2097152 /dev/zero > /logs/agent/big$i.bin; done\n"
             "echo solved > /app/done.txt\n")
    make_task(ds, "big-files", solve=solve, check="[ -f /app/done.txt ]")
    rec = record_of(run_job(ds, harnesses=["oracle"], max_log_mb=1), "big-files", "oracle")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert rec.logs.max_dir_bytes == 4 * MIB
    trial = tmp_path / "jobs" / "job" / "trials" / rec.trial_id
    kept = sum(p.stat().st_size for p in (trial / "agent").rglob("*") if p.is_file())
    assert kept <= 4 * MIB
    agent = {d.dir: d for d in rec.logs.dropped}["agent"]
    assert agent.entries >= 6 and "byte budget" in agent.reason, agent
    assert (trial / "verifier" / "reward.txt").is_file()
