"""A job where every trial is scored: counts, mean, interval and a clean invalid section."""

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_build import load_results


def test_all_scored_summary_counts_mean_and_interval(tmp_path):
    trials = [make_trial(f"task-{i:02d}", reward=1.0 if i < 8 else 0.0) for i in range(10)]
    job_dir = write_job_dir(tmp_path, make_job(trials), trials)

    results = load_results(job_dir)
    (s,) = results.summaries
    assert (s.trials, s.scored, s.invalid, s.passed, s.failed) == (10, 10, 0, 8, 2)
    assert s.mean_reward == 0.8
    # Wilson score interval for 8/10 at 95% (textbook value 0.490-0.943).
    assert round(s.reward_interval.low, 3) == 0.490 and round(s.reward_interval.high, 3) == 0.943
    assert s.reward_interval.method == "Wilson score"
    assert s.pass_at_k == []  # one attempt: no pass@k columns

    md = render_markdown(results)
    assert "mean reward **0.800** (95% CI 0.490–0.943) over **10** scored of 10 trials" in md
    assert "| oracle | 10 | 10 | 0 | 0 | 0 | 0 | 0.800 | 0.490–0.943 |" in md
    assert "pass@1" not in md and "pass@k |" not in md
    assert "## Invalid attempts (0)\n\nNone: every recorded trial was scored." in md
    assert "Tasks that could not be loaded" not in md and "Trials without a record" not in md
    # Header: identity and run conditions.
    for text in ("| Name | demo-job |", "| Id | `job-1` |", "| Dataset | `examples/tasks` |",
                 "| Harnesses | oracle 1.0.0 (reference) |", "| Attempts | 1 per task and harness |",
                 "| Concurrency | 4 (at most 10 trials ran at once) |", "agent 900s, verifier 600s; task settings, no multiplier",
                 "| Started | 2025-03-01T12:00:00Z |", "| Ended | 2025-03-01T13:03:00Z |", "| tbflow | 0.1.0"):
        assert text in md, text


def test_timeout_multiplier_from_config_is_shown(tmp_path):
    trials = [make_trial("a", agent_timeout=1800.0), make_trial("b", agent_timeout=600.0)]
    job_dir = write_job_dir(tmp_path, make_job(trials, timeout_multiplier=2.0), trials)
    md = render_markdown(load_results(job_dir))
    assert "agent 600–1800s (varies by task), verifier 600s; timeout\\_multiplier = 2.0" in md
