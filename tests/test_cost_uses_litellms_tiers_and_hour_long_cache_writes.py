"""A call is priced with LiteLLM's tiers: past 200k prompt tokens (cache reads and writes counted in
the prompt's size) every token costs the ``*_above_200k_tokens`` price, and cache writes kept an
hour cost ``cache_creation_input_token_cost_above_1hr``. Dropping them once priced a 300k-token
Sonnet 4.5 call at half its price."""

from __future__ import annotations

import json
import math

import pytest

from tasks_lib.errors import InputError
from tasks_lib.pricing.price_table import call_cost, default_price_table, load_price_table, parse_price_table
from tasks_lib.trajectory import from_anthropic
from tasks_lib.trial.trajectory_stage import job_prices, keep_job_prices

SONNET = default_price_table().lookup("anthropic/claude-sonnet-4-5")


def test_a_300k_token_sonnet_4_5_call_costs_its_real_price():
    # Anthropic's long-context price: $6 / $22.50 per million tokens in / out past 200k
    cost = call_cost(SONNET, 300_000, 2_000, None, None, prompt_includes_cache=False)
    assert math.isclose(cost, 300_000 * 6e-6 + 2_000 * 22.5e-6)
    assert math.isclose(call_cost(SONNET, 200_000, 2_000, None, None, False), 200_000 * 3e-6 + 2_000 * 15e-6)


def test_cache_reads_and_writes_count_towards_the_tier_and_take_its_prices():
    cost = call_cost(SONNET, 10_000, 100, cache_read=150_000, cache_write=50_000, prompt_includes_cache=False)
    assert math.isclose(cost, 10_000 * 6e-6 + 100 * 22.5e-6 + 150_000 * 0.6e-6 + 50_000 * 7.5e-6)


def test_hour_long_cache_writes_cost_the_hour_price():
    cost = call_cost(SONNET, 1_000, 100, cache_read=0, cache_write=10_000, prompt_includes_cache=False,
                     cache_write_1h=4_000)
    assert math.isclose(cost, 1_000 * 3e-6 + 100 * 15e-6 + 6_000 * 3.75e-6 + 4_000 * 6e-6)
    over = call_cost(SONNET, 250_000, 0, 0, 10_000, False, cache_write_1h=10_000)
    assert math.isclose(over, 250_000 * 6e-6 + 10_000 * 12e-6)  # the hour price of the long-context tier


def test_the_hour_long_writes_are_read_from_anthropics_usage():
    reply = {"model": "claude-sonnet-4-5", "content": [], "usage": {
        "input_tokens": 5, "output_tokens": 1, "cache_creation_input_tokens": 300, "cache_read_input_tokens": 7,
        "cache_creation": {"ephemeral_5m_input_tokens": 100, "ephemeral_1h_input_tokens": 200}}}
    turn = from_anthropic.turn(reply)
    assert (turn.cache_read, turn.cache_write, turn.cache_write_1h) == (7, 300, 200)


def test_gemini_counts_cache_inside_the_prompt_for_its_tier():
    pro = default_price_table().lookup("gemini-2.5-pro")
    cost = call_cost(pro, 250_000, 1_000, cache_read=100_000, cache_write=None, prompt_includes_cache=True)
    assert math.isclose(cost, 150_000 * 2.5e-6 + 1_000 * 15e-6 + 100_000 * 0.25e-6)


def test_a_users_tiers_survive_the_jobs_copy_of_the_table(tmp_path):
    """TOML and JSON tables keep their tiers, and so does the job's own copy (prices.json)."""
    user = tmp_path / "prices.toml"
    user.write_text('["my-model"]\ninput_cost_per_token = 1e-6\noutput_cost_per_token = 2e-6\n'
                    "input_cost_per_token_above_128k_tokens = 3e-6\ninput_cost_per_token_above_256k_tokens = 5e-6\n")
    table = load_price_table(user)
    keep_job_prices(tmp_path, user)
    for price in (table.lookup("my-model"), job_prices(tmp_path).lookup("my-model")):
        assert math.isclose(call_cost(price, 100_000, 0, None, None, True), 0.1)
        assert math.isclose(call_cost(price, 200_000, 0, None, None, True), 0.6)
        assert math.isclose(call_cost(price, 300_000, 0, None, None, True), 1.5)  # the highest tier passed


def test_a_tier_that_is_not_a_number_names_the_model():
    text = json.dumps({"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6,
                             "input_cost_per_token_above_200k_tokens": "cheap"}})
    with pytest.raises(InputError, match=r"t\.json.*'m'"):
        parse_price_table(text, "t.json")
