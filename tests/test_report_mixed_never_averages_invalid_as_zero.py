"""Invalid trials are counted beside the mean, never averaged in as 0."""

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_build import load_results


def test_mean_is_over_scored_trials_only(tmp_path):
    trials = [
        make_trial("a", "codex", reward=1.0), make_trial("b", "codex", reward=1.0),
        make_trial("c", "codex", reward=1.0), make_trial("d", "codex", reward=0.0),
        make_trial("e", "codex", invalid="harness"), make_trial("f", "codex", invalid="environment"),
        make_trial("g", "codex", invalid="verifier"), make_trial("h", "codex", invalid="verifier"),
    ]
    job_dir = write_job_dir(tmp_path, make_job(trials, model="openai/gpt-x"), trials)
    (s,) = load_results(job_dir).summaries

    assert s.mean_reward == 0.75  # 3 of 4 scored; averaging the 4 invalid as 0 would give 0.375
    assert (s.trials, s.scored, s.invalid) == (8, 4, 4)
    assert s.invalid_by_kind.model_dump() == {"harness": 1, "environment": 1, "verifier": 2,
                                              "interrupted": 0, "unknown": 0}
    md = render_markdown(load_results(job_dir))
    assert "| codex | 8 | 4 | 4 | 1 | 1 | 2 | 0.750 |" in md
    assert "over **4** scored of 8 trials; 3 passed; 4 invalid (1 harness, 1 environment, 2 verifier)" in md
    assert "| Model | openai/gpt\\-x |" not in md and "| Model | openai/gpt-x |" in md
