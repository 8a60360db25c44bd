"""Cost the harness did not report is "unknown", never $0; a sum with an unknown in it is shown as a
lower bound ("≥ $X, ..."), never as a known total."""

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.records.record_models import Usage
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_build import load_results


def _summary_row(md: str, harness: str) -> list[str]:
    line = next(row for row in md.splitlines() if row.startswith(f"| {harness} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_cost_unknown_partial_and_known(tmp_path):
    trials = [
        make_trial("a", "codex", usage=Usage(input_tokens=100, output_tokens=10)),  # no cost reported
        make_trial("b", "codex", usage=Usage(input_tokens=200, output_tokens=20)),
        make_trial("a", "claude", usage=Usage(input_tokens=300, output_tokens=30, cost_usd=0.25)),
        make_trial("b", "claude", usage=Usage(input_tokens=400, output_tokens=40)),
        make_trial("a", "pi", usage=Usage(input_tokens=1, output_tokens=1, cost_usd=0.5)),
        make_trial("b", "pi", usage=Usage(input_tokens=1, output_tokens=1, cost_usd=0.75)),
        make_trial("a", "oracle"),
    ]
    job_dir = write_job_dir(tmp_path, make_job(trials, harnesses=["codex", "claude", "pi", "oracle"]), trials)
    results = load_results(job_dir)
    by = {s.harness: s for s in results.summaries}
    assert by["codex"].cost_usd is None and by["codex"].cost_trials == 0
    assert by["claude"].cost_usd == 0.25 and by["claude"].cost_trials == 1
    assert by["pi"].cost_usd == 1.25
    assert (by["codex"].input_tokens, by["codex"].output_tokens) == (300, 30)
    assert by["oracle"].input_tokens is None

    md = render_markdown(results)
    codex, claude, pi, oracle = (_summary_row(md, h) for h in ("codex", "claude", "pi", "oracle"))
    assert codex[-2] == "unknown" and "$0" not in " ".join(codex)
    assert claude[-2] == "≥ $0.2500, 1 trial unknown"
    assert by["claude"].cost.usd is None and by["claude"].cost.at_least_usd == 0.25
    assert pi[-2] == "$1.2500"
    assert codex[-4:-2] == ["300", "30"]
    assert oracle[-4:-1] == ["—", "—", "unknown"]  # a reference harness has no tokens; cost still never 0


def test_the_price_tables_cost_wins_over_the_clis_own(tmp_path):
    """A trial priced from the price table (``agent.cost_usd``, over the gateway's counts) shows that
    cost in report.md and results.json, even where the CLI reported its own; unpriced, the CLI's stands."""
    priced = make_trial("a", "claude", usage=Usage(input_tokens=300, output_tokens=30, cost_usd=0.25))
    priced.agent = priced.agent.model_copy(update={"cost_usd": 0.125})
    trials = [priced, make_trial("b", "claude", usage=Usage(input_tokens=1, output_tokens=1, cost_usd=0.5))]
    job_dir = write_job_dir(tmp_path, make_job(trials, harnesses=["claude"]), trials)
    results = load_results(job_dir)
    assert results.summaries[0].cost_usd == 0.625 and results.summaries[0].cost_trials == 2
    assert _summary_row(render_markdown(results), "claude")[-2] == "$0.6250"
