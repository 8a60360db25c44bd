"""A job of model harnesses against the scripted mock model, through the real gateway, Docker and
Prefect: each trial gets ``trajectory.json`` in its host directory (written by tbflow, outside
what comes down from the container), showing the tool call that solved the task and its output,
``final_metrics`` equal to the trial's gateway usage, each step's cost and the trial's from the
``--prices`` table (in the record, the trajectory and report.md), and the file loads with Harbor's own Trajectory model. tbflow-agent (host-side, OpenAI Chat) and
codex (a CLI in the container, OpenAI Responses).

The two halves of issue 30 meet here too: the same job's report.html trial page shows the solving
tool call in Chromium, and ``tbflow export`` puts the trajectory where Harbor's viewer serves it."""

import html
import json
from pathlib import Path

import pytest

from cli_model import SOLVE, pointed_at_mock, solvable_task
from harbor_check import export_by_cli, harbor_check, harbor_loads
from headless_chromium import dump_dom
from mock_model import MockModel
from task_factory import record_of


def test_each_model_trial_has_a_trajectory_with_its_tool_call(run_job, tmp_path, monkeypatch):
    harnesses = ["tbflow-agent", "codex"]
    prices = tmp_path / "prices.json"
    prices.write_text(json.dumps({"mock-model": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-5}}))
    with pointed_at_mock(monkeypatch, MockModel(SOLVE)):
        result = run_job(solvable_task(tmp_path / "ds"), harnesses=harnesses, model="mock/mock-model",
                         prices=str(prices))
    files = []
    for harness in harnesses:
        rec = record_of(result, "make-done", harness)
        assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (rec.validity, rec.agent)
        assert rec.agent.trajectory == "trajectory.json" and rec.agent.trajectory_problem is None, rec.agent
        trial_dir = Path(result.job_dir) / "trials" / rec.trial_id
        files.append(trial_dir / "trajectory.json")
        t = json.loads(files[-1].read_text())
        agent_steps = [s for s in t["steps"] if s["source"] == "agent"]
        calls = [(s, c) for s in agent_steps for c in s.get("tool_calls", [])]
        solving = [(s, c) for s, c in calls if SOLVE in json.dumps(c["arguments"])]
        assert solving, calls
        step, call = solving[0]
        assert call["tool_call_id"] in [r.get("source_call_id") for r in step["observation"]["results"]], step
        gw = rec.agent.gateway_usage
        assert (t["final_metrics"]["total_prompt_tokens"], t["final_metrics"]["total_completion_tokens"]) == (
            gw.input_tokens, gw.output_tokens)
        assert sum(s["metrics"]["prompt_tokens"] for s in agent_steps) == gw.input_tokens
        cost = gw.input_tokens * 1e-6 + gw.output_tokens * 1e-5
        assert rec.agent.cost_usd == pytest.approx(cost) and t["final_metrics"]["total_cost_usd"] == pytest.approx(cost)
        assert sum(s["metrics"]["cost_usd"] for s in agent_steps) == pytest.approx(cost)
    assert "valid ATIF" in harbor_loads(*files)
    assert f"${cost:,.4f}" in (Path(result.job_dir) / "report.md").read_text()


def test_model_trials_trajectory_in_report_html_and_harbor_export(run_job, tmp_path, monkeypatch):
    """A trajectory that only its own file shows is half a feature: the offline report's trial page
    and the Harbor export must carry the tool call the gateway recorded."""
    from tasks_lib.report.html.render_html import TRIAL_PAGES, trial_page_name

    with pointed_at_mock(monkeypatch, MockModel(SOLVE)):
        result = run_job(solvable_task(tmp_path / "ds"), harnesses=["tbflow-agent"], model="mock/mock-model",
                         job_name="traj")
    rec = record_of(result, "make-done", "tbflow-agent")
    assert rec.validity.status == "scored" and rec.agent.trajectory == "trajectory.json", rec.agent
    page = Path(result.job_dir) / TRIAL_PAGES / trial_page_name(rec.trial_id)
    dom = dump_dom(page)
    assert html.escape(SOLVE, quote=False) in dom and "no trajectory recorded" not in dom, dom[-2000:]

    out = tmp_path / "export"
    export_by_cli(result.job_dir, out)
    checked = harbor_check(out)
    trial = next(iter(checked["jobs"]["traj"]["trials"].values()))
    steps = len(json.loads((Path(result.job_dir) / "trials" / rec.trial_id / "trajectory.json").read_text())["steps"])
    assert trial["trajectory_steps"] == steps, trial
    assert all(v["trajectory"] for v in checked["viewer"]["traj"].values()), checked["viewer"]
