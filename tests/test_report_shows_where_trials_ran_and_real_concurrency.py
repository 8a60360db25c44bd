"""No record said which host or shard ran a trial, and the report showed only the configured
concurrency. Records now carry ``ran_on``; the report lists one row per machine and flow run and
how many trials really ran at once."""

from datetime import timedelta

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.records.record_models import RanOn
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_build import load_results
from tasks_lib.report.run_slices import peak_concurrency


def _at(record, start_sec: float, length_sec: float, host: str, run: str):
    start = record.started_at + timedelta(seconds=start_sec)
    return record.model_copy(update=dict(
        started_at=start, ended_at=start + timedelta(seconds=length_sec), duration_sec=length_sec,
        ran_on=RanOn(host=host, pid=1, flow_run_id=run, flow_run_name=f"shard-{run}", flow_name="tbflow-trials")))


def test_peak_counts_overlaps_and_back_to_back_spans_do_not_overlap():
    t0 = make_trial("x").started_at
    s = lambda a, b: (t0 + timedelta(seconds=a), t0 + timedelta(seconds=b))  # noqa: E731
    assert peak_concurrency([]) == 0
    assert peak_concurrency([s(0, 10), s(10, 20), s(20, 30)]) == 1
    assert peak_concurrency([s(0, 10), s(5, 15), s(6, 7), s(14, 20)]) == 3


def test_two_shards_on_two_hosts_each_get_a_row_and_the_job_its_real_peak(tmp_path):
    base = [make_trial(f"t{i}") for i in range(5)]
    trials = [_at(base[0], 0, 10, "alpha", "r1"), _at(base[1], 0, 10, "alpha", "r1"), _at(base[2], 10, 10, "alpha", "r1"),
              _at(base[3], 5, 10, "beta", "r2"), _at(base[4], 30, 5, "beta", "r2")]
    results = load_results(write_job_dir(tmp_path, make_job(trials), trials))
    job = results.job
    assert job.peak_concurrency == 3  # alpha's two, and beta's first from 5 s to 10 s
    assert [(r.host, r.trials, r.peak_concurrency) for r in job.runs] == [("alpha", 3, 2), ("beta", 2, 1)]
    md = render_markdown(results)
    assert "| Concurrency | 4 (at most 3 trials ran at once) |" in md
    assert "| Ran on | `alpha` · shard-r1 (a shard): 3 trial(s), at most 2 at once, 20.0s |" in md
    assert "|  | `beta` · shard-r2 (a shard): 2 trial(s), at most 1 at once, 30.0s |" in md


def test_records_without_ran_on_show_no_rows(tmp_path):
    trials = [make_trial("a")]
    md = render_markdown(load_results(write_job_dir(tmp_path, make_job(trials), trials)))
    assert "Ran on" not in md and "(at most 1 trials ran at once)" in md
