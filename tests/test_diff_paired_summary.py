"""The paired summary: means over tasks scored on both sides, wins/losses/ties, flagged conditions."""

import pytest
from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.errors import InputError
from tasks_lib.report.job_diff import diff_jobs
from tasks_lib.report.render_diff import render_diff
from tasks_lib.report.results_build import load_results


def test_two_harnesses_paired_over_shared_scored_tasks(tmp_path):
    a = [make_trial("t1", "oracle", reward=1.0), make_trial("t2", "oracle", reward=1.0),
         make_trial("t3", "oracle", reward=0.0), make_trial("t4", "oracle", reward=1.0),
         make_trial("t5", "oracle", reward=1.0)]
    b = [make_trial("t1", "codex", 1, reward=1.0), make_trial("t1", "codex", 2, reward=0.0),
         make_trial("t2", "codex", 1, reward=0.0), make_trial("t2", "codex", 2, invalid="harness"),
         make_trial("t3", "codex", 1, reward=1.0), make_trial("t4", "codex", 1, reward=1.0),
         make_trial("t5", "codex", 1, invalid="environment")]
    ja = write_job_dir(tmp_path / "a", make_job(a, name="oracle-run"), a)
    jb = write_job_dir(tmp_path / "b", make_job(b, name="codex-run", attempts=2, model="openai/gpt-x",
                                                timeout_multiplier=2.0), b)

    d = diff_jobs(load_results(ja), load_results(jb))
    (arm,) = d.arms
    assert (arm.harness_a, arm.harness_b) == ("oracle", "codex")
    p = arm.paired
    # t5 is invalid in B: excluded from the pair, not counted as a loss
    assert p.tasks == 4
    assert p.mean_a == pytest.approx((1 + 1 + 0 + 1) / 4)
    assert p.mean_b == pytest.approx((0.5 + 0 + 1 + 1) / 4)  # task means over scored attempts
    assert (p.b_better, p.a_better, p.ties) == (1, 2, 1)
    assert p.sign_test_p == pytest.approx(1.0)
    row = {t.task: t for t in arm.tasks}["t2"]
    assert (row.b.scored, row.b.invalid, row.delta) == (1, 1, -1.0)

    md = render_diff(d)
    assert "**Paired over 4 task(s) scored on both sides:** mean reward A 0.750 → B 0.625" in md
    assert "B better on **1**, A better on **2**, ties **1**" in md
    assert "| t2 | ✅ 1.00 (1/1 passed) | ❌ 0.00 (0/1 passed, ⚠️ 1 invalid) | -1.00 |" in md
    assert "### A better (2)" in md and "- t2: 1.00 → 0.00 (-1.00); invalid A 0, B 1" in md
    assert "| model | — | openai/gpt-x | ⚠️ differs |" in md
    assert "| attempts | 1 | 2 | ⚠️ differs |" in md
    assert "| timeout settings | none | timeout\\_multiplier=2.0 | ⚠️ differs |" in md
    assert "| harnesses | oracle 1.0.0 | codex 0.9.1 | compared |" in md
    assert "different conditions" in md


def test_harness_pairing_rules(tmp_path):
    two = [make_trial("t", "oracle"), make_trial("t", "nop", reward=0.0)]
    ja = write_job_dir(tmp_path / "a", make_job(two, name="both"), two)
    one = [make_trial("t", "codex")]
    jb = write_job_dir(tmp_path / "b", make_job(one, name="codex"), one)
    ra, rb = load_results(ja), load_results(jb)

    same = diff_jobs(ra, ra)
    assert [(x.harness_a, x.harness_b) for x in same.arms] == [("nop", "nop"), ("oracle", "oracle")]
    within = diff_jobs(ra, ra, "oracle", "nop")
    assert within.arms[0].paired.a_better == 1
    with pytest.raises(InputError) as exc:
        diff_jobs(ra, rb)
    assert exc.value.where == "--harness-a/--harness-b"
    with pytest.raises(InputError) as exc:
        diff_jobs(ra, rb, harness_b="codex")
    assert exc.value.where == "--harness-a"
    assert diff_jobs(ra, rb, harness_a="oracle").arms[0].harness_b == "codex"


def test_long_diff_sections_fold(tmp_path):
    a = [make_trial(f"t{i:03d}", "codex", reward=1.0) for i in range(30)]
    b = [make_trial(f"t{i:03d}", "codex", reward=0.0, job_id="job-2") for i in range(30)]
    ja = write_job_dir(tmp_path / "a", make_job(a, name="a"), a)
    jb = write_job_dir(tmp_path / "b", make_job(b, name="b", job_id="job-2"), b)
    d = diff_jobs(load_results(ja), load_results(jb))
    folded = render_diff(d)
    assert "<summary>30 tasks, largest difference first</summary>" in folded
    assert "<summary>All 30 tasks</summary>" in folded
    assert folded.count("<details>") == folded.count("</details>") == 2
    flat = render_diff(d, collapsible=False)
    assert "<details>" not in flat and "### All tasks (30)" in flat
    assert sum(line.startswith("- t") for line in flat.splitlines()) == 30
