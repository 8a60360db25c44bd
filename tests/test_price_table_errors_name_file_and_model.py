"""A price table given with ``--prices`` is read before anything runs: a file that is missing, not
JSON/TOML, or has an entry with a non-number price exits 2 naming ``--prices``, the file and the
model; LiteLLM's own file format (with its ``sample_spec`` entry) and TOML load; a model is found
with or without its ``provider/`` prefix; a user entry wins over the default table."""

import pytest
from typer.testing import CliRunner

from flows.cli.main import app
from tasks_lib.errors import InputError
from tasks_lib.pricing.price_table import default_price_table, load_price_table, parse_price_table
from test_cli_input_errors_exit_2 import EXAMPLES


@pytest.mark.parametrize("text, words", [
    ("{not json", ["not a valid JSON price table"]),
    ('{"gpt-x": {"input_cost_per_token": "cheap"}}', ["model 'gpt-x'", "input_cost_per_token"]),
    ('["gpt-x"]', ["maps model names to entries"]),
])
def test_bad_table_exits_2_naming_flag_file_and_model(tmp_path, text, words):
    table, jobs = tmp_path / "prices.json", tmp_path / "jobs"
    table.write_text(text)
    res = CliRunner().invoke(app, ["run", str(EXAMPLES), "--jobs-dir", str(jobs), "--prices", str(table)])
    assert res.exit_code == 2, res.output
    assert "--prices" in res.output and "prices.json" in res.output
    for word in words:
        assert word in res.output
    assert not jobs.exists()


def test_missing_table_exits_2(tmp_path):
    res = CliRunner().invoke(app, ["run", str(EXAMPLES), "--jobs-dir", str(tmp_path / "j"),
                                   "--prices", str(tmp_path / "none.json")])
    assert res.exit_code == 2 and "--prices" in res.output and "none.json" in res.output, res.output


def test_litellm_format_toml_prefixes_and_user_entries_win(tmp_path):
    litellm = parse_price_table('{"sample_spec": {"input_cost_per_token": 0, "max_tokens": "LEGACY"},'
                                ' "gemini/gemini-x": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6,'
                                ' "litellm_provider": "gemini", "mode": "chat"}}', "litellm.json")
    assert litellm.lookup("gemini-x").output_cost_per_token == 2e-6
    assert litellm.lookup("google/gemini-x") is litellm.lookup("gemini-x") and litellm.lookup("other") is None
    (tmp_path / "p.toml").write_text('["gpt-4o"]\ninput_cost_per_token = 1.0\noutput_cost_per_token = 2.0\n')
    mine = load_price_table(tmp_path / "p.toml").over(default_price_table())
    assert mine.lookup("openai/gpt-4o").input_cost_per_token == 1.0
    assert mine.lookup("claude-haiku-4-5") == default_price_table().lookup("claude-haiku-4-5")
    with pytest.raises(InputError):
        parse_price_table("[x", "p.toml", toml=True)
