"""Rewards must be one finite number in [0, 1] (or a flat JSON object of them); everything else
is 'no reward' with a reason, never 0."""

import pytest

from tasks_lib.judge.rewards import read_rewards


def _dir(tmp_path, txt=None, js=None):
    if txt is not None:
        (tmp_path / "reward.txt").write_text(txt)
    if js is not None:
        (tmp_path / "reward.json").write_text(js)
    return tmp_path


@pytest.mark.parametrize("txt, reward", [("1", 1.0), (" 0\n", 0.0), ("0.5", 0.5), ("1.0\n", 1.0)])
def test_valid_reward_txt(tmp_path, txt, reward):
    assert read_rewards(_dir(tmp_path, txt=txt)).reward == reward


@pytest.mark.parametrize("txt", ["", "   \n", "nan", "inf", "-inf", "1e400", "10", "2", "-1", "pass", "1 1"])
def test_bad_reward_txt_is_no_reward(tmp_path, txt):
    r = read_rewards(_dir(tmp_path, txt=txt))
    assert r.reward is None and r.problem


@pytest.mark.parametrize("js, reward", [('{"reward": 1}', 1.0), ('{"score": 0.25}', 0.25),
                                        ('{"reward": 0, "style": 0.5}', 0.0)])
def test_valid_reward_json(tmp_path, js, reward):
    assert read_rewards(_dir(tmp_path, js=js)).reward == reward


@pytest.mark.parametrize("js", ["", "[1]", "{}", '{"reward": "1"}', '{"reward": true}', '{"a": 1, "b": 0}',
                                '{"reward": {"x": 1}}', "{not json"])
def test_bad_reward_json_is_no_reward(tmp_path, js):
    r = read_rewards(_dir(tmp_path, js=js))
    assert r.reward is None and r.problem


def test_both_files_must_agree(tmp_path):
    assert read_rewards(_dir(tmp_path, txt="1", js='{"reward": 1.0}')).reward == 1.0
    r = read_rewards(_dir(tmp_path, txt="0", js='{"reward": 1}'))
    assert r.reward is None and "disagree" in r.problem


def test_no_files(tmp_path):
    r = read_rewards(tmp_path)
    assert r.reward is None and "no reward" in r.problem
