"""100+ tasks stay readable: long sections fold on GitHub; the Prefect rendering has no <details>."""

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_build import load_results


def test_long_sections_fold_and_every_row_is_present(tmp_path):
    trials = [make_trial(f"task-{i:03d}", reward=1.0 if i % 3 else 0.0) for i in range(120)]
    trials += [make_trial(f"env-{i:02d}", invalid="environment") for i in range(25)]
    job_dir = write_job_dir(tmp_path, make_job(trials), trials)
    results = load_results(job_dir)

    folded = render_markdown(results)
    assert folded.count("<details>") == 3 and folded.count("</details>") == 3
    assert "<summary>All 145 trials</summary>\n\n| Harness | Task | Attempt | Status | Tokens in |" in folded
    assert "<summary>All 25 invalid attempts</summary>\n\n| Harness |" in folded
    assert ("<summary><b>oracle</b>: 145 tasks: 80 passed every attempt, 40 with a failed attempt, "
            "25 with an invalid attempt</summary>") in folded
    assert "Most common causes: environment · build-image ×25." in folded
    # the summary comes before any fold: it is what a reader sees first
    assert folded.index("## Summary") < folded.index("<details>")

    flat = render_markdown(results, collapsible=False)
    assert "<details>" not in flat and "### oracle" in flat
    for text in (folded, flat):
        assert sum(1 for line in text.splitlines() if line.startswith("| task-")) == 120
        # each invalid trial: once in the invalid attempts, once in the tokens and cost per trial
        assert sum(1 for line in text.splitlines() if line.startswith("| oracle | env-")) == 50
        assert sum(1 for line in text.splitlines() if line.startswith("| oracle | task-")) == 120
