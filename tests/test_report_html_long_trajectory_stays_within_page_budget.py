"""A trial page must stay small whatever the agent printed (pure; no browser): the failure pinned
is a 500-step transcript with megabytes of tool output making its page, or report.html, too big
to open; cut texts and left-out steps must say where the full text is."""

from __future__ import annotations

import json

from atif_fixture import trajectory

from tasks_lib.report.html.trajectory_view import PAGE_TEXT_BUDGET, TEXT_CHARS, trajectory_view


def _long(steps: int, output_chars: int) -> str:
    t = trajectory()
    agent = t["steps"][1]
    t["steps"] = [t["steps"][0]] + [
        {**agent, "step_id": i + 2,
         "tool_calls": [{**agent["tool_calls"][0], "tool_call_id": f"c{i}"}],
         "observation": {"results": [{"source_call_id": f"c{i}", "content": "x" * output_chars}]}}
        for i in range(steps)]
    return json.dumps(t)


def test_long_outputs_are_cut_and_the_page_budget_holds():
    view = trajectory_view(_long(500, 50_000))
    assert view is not None and view.problem is None
    shown = sum(len(s.message) + len(s.reasoning) + sum(len(c.arguments) + len(c.output or "")
                                                        for c in s.tool_calls) for s in view.steps)
    assert shown <= PAGE_TEXT_BUDGET + 200 * len(view.steps)  # the cut notes themselves
    first = view.steps[1].tool_calls[0]
    assert first.output_chars == 50_000 and len(first.output or "") < TEXT_CHARS + 100
    assert "more characters in trajectory.json" in (first.output or "")
    assert view.omitted_steps > 0 and len(view.steps) + view.omitted_steps == 501


def test_short_trajectory_is_whole_and_unreadable_one_says_why():
    view = trajectory_view(json.dumps(trajectory()))
    assert view is not None and view.omitted_steps == 0 and not any(s.cut for s in view.steps)
    assert view.total_cost_usd == 0.0038 and view.steps[1].tool_calls[0].output == "line 0\nline 1\nline 2"
    assert trajectory_view(None) is None
    assert "not JSON" in (trajectory_view("{oops").problem or "")
    assert "no steps" in (trajectory_view('{"steps": 3}').problem or "")
