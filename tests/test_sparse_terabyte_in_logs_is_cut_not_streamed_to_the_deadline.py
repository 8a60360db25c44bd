"""A sparse 1 TiB file in ``/logs`` made tbflow's download of ``/logs`` stream the whole terabyte
of zeros (entries it skips or cuts still stream through the archive) until the download's 300 s
deadline, and the trial lost every log it had (issue 29). The archive is now read up to a bound
(the kept dirs' budgets plus some slack) and then shut: what came before is kept, the cut is
listed in the record, the trial is scored on the judge's reward, and the job goes on."""

import pytest

from task_factory import make_task, record_of


@pytest.mark.docker
def test_sparse_terabyte_in_logs_is_cut_and_the_trial_scored(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "sparse", solve="echo before > /logs/agent/a-note.txt\ntruncate -s 1T /logs/agent/huge\n"
                                  "echo solved > /app/done.txt\n", check="test -s /app/done.txt")
    make_task(ds, "honest", solve="echo solved > /app/done.txt\n", check="test -s /app/done.txt")
    result = run_job(ds, max_log_mb=1, concurrency=2)

    rec = record_of(result, "sparse")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert not [f for f in rec.flags if "could not be downloaded" in f.message], rec.flags
    assert any("passed" in d.reason and "the rest was not read" in d.reason for d in rec.logs.dropped), rec.logs
    agent = tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "agent"
    assert (agent / "a-note.txt").read_text() == "before\n"  # what came before the cut is kept

    honest = record_of(result, "honest")
    assert (honest.validity.status, honest.validity.reward) == ("scored", 1.0), honest.validity
