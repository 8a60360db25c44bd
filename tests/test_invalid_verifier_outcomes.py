"""Verifier outcomes that give no trustworthy reward are invalid: verifier, never 0."""


from task_factory import make_task, record_of


def test_test_sh_that_writes_no_reward_is_invalid_verifier(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "no-reward", test_sh="#!/bin/bash\necho checked but wrote nothing\n")
    rec = record_of(run_job(ds), "no-reward")
    assert rec.validity.status == "invalid" and rec.validity.kind == "verifier"
    assert "no reward" in rec.validity.reason
    assert rec.validity.evidence == "verifier/test-stdout.txt"


def test_test_sh_that_hangs_is_invalid_verifier_within_its_timeout(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "hangs", verifier_timeout=3,
              test_sh="#!/bin/bash\nsleep infinity &\nsleep infinity\necho 1 > /logs/verifier/reward.txt\n")
    rec = record_of(run_job(ds), "hangs")
    assert rec.validity.status == "invalid" and rec.validity.kind == "verifier"
    assert rec.verifier.timed_out
    assert "timed out" in rec.validity.reason
    # a test.sh that never ends: the job ending at all is the timeout at work (pytest-timeout bounds it)


def test_unparseable_and_out_of_range_rewards_are_invalid(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "ten", test_sh="#!/bin/bash\necho 10 > /logs/verifier/reward.txt\n")
    make_task(ds, "nan", test_sh="#!/bin/bash\necho nan > /logs/verifier/reward.txt\n")
    make_task(ds, "disagree", test_sh="#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
                                      "echo '{\"reward\": 0}' > /logs/verifier/reward.json\n")
    result = run_job(ds)
    for name, words in (("ten", "[0, 1]"), ("nan", "[0, 1]"), ("disagree", "disagree")):
        rec = record_of(result, name)
        assert rec.validity.status == "invalid" and rec.validity.kind == "verifier", name
        assert words in rec.validity.reason, rec.validity.reason


def test_agent_prewritten_reward_is_discarded(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "forged", solve="echo 1 > /logs/verifier/reward.txt\necho '{\"reward\": 1}' > /logs/verifier/reward.json\n",
              check="false")
    rec = record_of(run_job(ds), "forged")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0)
    assert rec.verifier.rewards == {"reward": 0.0}
