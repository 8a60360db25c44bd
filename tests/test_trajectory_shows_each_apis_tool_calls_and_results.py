"""The trajectory built from a recorded exchange shows, for each API the gateway forwards (OpenAI
Chat, OpenAI Responses, Anthropic Messages, Gemini), the system and user texts, the model's tool
call with its arguments, the tool's output as that call's observation, the final message, per-step
tokens and costs, and final metrics equal to the gateway's usage. Pure: no Docker."""

import pytest
from exchange_fixtures import APIS, COMMAND, FINAL, OUTPUT, SYSTEM, TASK, record_two_turns

from tasks_lib.gateway.exchange.exchange_reader import read_exchange
from tasks_lib.pricing.price_table import default_price_table, parse_price_table
from tasks_lib.trajectory.atif_models import Agent
from tasks_lib.trajectory.build_trajectory import build_trajectory


@pytest.mark.parametrize("api", APIS)
def test_tool_call_and_its_output_are_steps(api, tmp_path):
    usage, call_id = record_two_turns(api, tmp_path / "x.jsonl")
    t = build_trajectory(read_exchange(tmp_path / "x.jsonl"), Agent(name="h", version="1"), usage,
                         default_price_table())
    assert [s.source for s in t.steps] == ["system", "user", "agent", "agent"]
    assert (t.steps[0].message, t.steps[1].message) == (SYSTEM, TASK)
    call_step, final_step = t.steps[2], t.steps[3]
    assert [(c.tool_call_id, c.function_name, c.arguments) for c in call_step.tool_calls] == [
        (call_id, "bash", {"command": COMMAND})]
    assert [(r.source_call_id, r.content) for r in call_step.observation.results] == [(call_id, OUTPUT)]
    assert final_step.message == FINAL and final_step.tool_calls is None
    assert [(s.metrics.prompt_tokens, s.metrics.completion_tokens) for s in (call_step, final_step)] == [
        (120, 15), (160, 5)]
    assert (t.final_metrics.total_prompt_tokens, t.final_metrics.total_completion_tokens) == (
        usage.input_tokens, usage.output_tokens) == (280, 20)
    assert t.final_metrics.total_steps == 4


@pytest.mark.parametrize("api", APIS)
def test_cost_per_step_sums_to_the_trials(api, tmp_path):
    usage, _ = record_two_turns(api, tmp_path / "x.jsonl")
    t = build_trajectory(read_exchange(tmp_path / "x.jsonl"), Agent(name="h", version="1"), usage,
                         default_price_table())
    costs = [s.metrics.cost_usd for s in t.steps if s.metrics]
    assert all(c is not None and c > 0 for c in costs)
    assert t.final_metrics.total_cost_usd == pytest.approx(sum(costs))


def test_a_user_price_wins_and_an_unpriced_model_stays_unknown(tmp_path):
    usage, _ = record_two_turns("openai-chat", tmp_path / "x.jsonl")
    mine = parse_price_table('{"gpt-4o": {"input_cost_per_token": 1.0, "output_cost_per_token": 2.0}}', "mine.json")
    t = build_trajectory(read_exchange(tmp_path / "x.jsonl"), Agent(name="h", version="1"), usage,
                         mine.over(default_price_table()))
    assert t.final_metrics.total_cost_usd == pytest.approx(280 * 1.0 + 20 * 2.0)
    unknown = build_trajectory(read_exchange(tmp_path / "x.jsonl"), Agent(name="h", version="1"), usage,
                               parse_price_table("{}", "empty.json"))
    assert unknown.final_metrics.total_cost_usd is None
    assert all(s.metrics.cost_usd is None for s in unknown.steps if s.metrics)
