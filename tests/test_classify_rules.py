"""The validity rules of docs/architecture.md §3, one case each."""

from tasks_lib.trial.trial_verdict import classify
from tasks_lib.records.record_models import AgentOutcome, StageError, Usage, VerifierOutcome


def agent(tokens=0, timed_out=False, exit_code=0):
    return AgentOutcome(exit_code=exit_code, timed_out=timed_out, timeout_sec=10, duration_sec=1,
                        usage=Usage(input_tokens=tokens, output_tokens=0) if tokens else None,
                        stdout_log="agent/x.jsonl", stderr_log="agent/x.stderr.log")


def verifier(reward=1.0, **kw):
    return VerifierOutcome(timeout_sec=10, duration_sec=1, reward=reward, stdout_log="verifier/test-stdout.txt", **kw)


def test_environment_error_wins():
    err = StageError(stage="build-image", kind="environment", message="boom", evidence="build.log")
    v = classify("reference", err, None, None)
    assert (v.status, v.kind, v.evidence) == ("invalid", "environment", "build.log")


def test_reference_harness_that_ran_is_scored_even_after_timeout():
    v = classify("reference", None, agent(timed_out=True, exit_code=None), verifier(0.0))
    assert (v.status, v.reward) == ("scored", 0.0)


def test_model_harness_with_zero_tokens_is_invalid_harness_even_with_exit_0():
    v = classify("model", None, agent(tokens=0, exit_code=0), verifier(1.0))
    assert (v.status, v.kind) == ("invalid", "harness")
    assert "never reached the model" in v.reason and v.evidence == "agent/x.stderr.log"


def test_model_harness_with_tokens_is_scored_despite_crash_or_timeout():
    assert classify("model", None, agent(tokens=5, exit_code=1), verifier(0.0)).status == "scored"
    assert classify("model", None, agent(tokens=5, timed_out=True, exit_code=None), verifier(1.0)).reward == 1.0


def test_verifier_problems_are_invalid_verifier():
    assert classify("reference", None, agent(), verifier(None, problem="no reward")).kind == "verifier"
    assert classify("reference", None, agent(), verifier(None, timed_out=True)).kind == "verifier"


def test_tampering_keeps_the_reward_test_sh_wrote():
    t = classify("reference", None, agent(), verifier(0.0, tampered=True))
    assert (t.status, t.reward) == ("scored", 0.0)


def test_broken_container_is_the_agents_result_scored_zero():
    from tasks_lib.records.record_models import TrialFlag

    flag = TrialFlag(kind="broke-container", message="removed /usr/bin/bash", evidence="verifier/broken.txt")
    t = classify("reference", None, agent(), verifier(None, problem="no reward"), broke=flag)
    assert (t.status, t.reward, t.evidence) == ("scored", 0.0, "verifier/broken.txt")
    assert classify("reference", None, agent(), None, broke=flag).reward == 0.0


def test_tbflow_bug_is_an_error_not_invalid_environment():
    err = StageError(stage="tbflow", kind="internal", message="KeyError: 'x'", evidence="error.txt")
    t = classify("reference", err, agent(), verifier(1.0))
    assert (t.status, t.kind, t.evidence) == ("error", None, "error.txt")
    assert "internal error" in t.reason


def test_harness_setup_error_is_invalid_harness():
    err = StageError(stage="prepare-harness", kind="harness", message="no solution")
    assert classify("reference", err, None, None).kind == "harness"
