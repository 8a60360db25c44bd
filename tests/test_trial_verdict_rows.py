"""Each row of the trial's verdict table (tasks_lib/trial/trial_verdict.py), without Docker: one
case a row, the precedence of every adjacent pair of rows that can both hold (the earlier wins),
the boundaries (the last retry, the first token), what Docker's evidence of the agent's doing
changes and when it is read at all, and the reader's table of docs/architecture.md checked
against the code."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tasks_lib.gateway.gateway_usage import GatewayUsage
from tasks_lib.records.record_models import AgentOutcome, StageError, TrialFlag, Usage, VerifierOutcome
from tasks_lib.trial.stage_failures import StageFailure
from tasks_lib.trial.trial_evidence import TrialEvidence
from tasks_lib.trial.trial_messages import MESSAGES
from tasks_lib.trial.trial_verdict import RETRY_ROW, ROWS, decide, retried


def agent(tokens: int = 0, **kw) -> AgentOutcome:
    return AgentOutcome(**{"exit_code": 0, "timed_out": False, "timeout_sec": 10, "duration_sec": 1,
                           "usage": Usage(input_tokens=tokens, output_tokens=0) if tokens else None,
                           "stdout_log": "agent/x.jsonl", "stderr_log": "agent/x.stderr.log", **kw})


def verifier(reward: float | None = 1.0, **kw) -> VerifierOutcome:
    return VerifierOutcome(timeout_sec=10, duration_sec=1, reward=reward, stdout_log="verifier/test-stdout.txt", **kw)


def failure(kind: str, retryable: bool = False, cause: str = "") -> StageFailure:
    stage = {"internal": "tbflow", "harness": "prepare-harness"}.get(kind, "run-verifier")
    evidence = {"internal": "error.txt"}.get(kind)
    return StageFailure(StageError(stage=stage, kind=kind, message=f"{kind} boom", evidence=evidence),  # type: ignore[arg-type]
                        retryable=retryable, cause=cause or ("environment" if kind == "environment" else kind))


BROKE = TrialFlag(kind="broke-container", message="removed /usr/bin/bash", evidence="verifier/broken.txt")
STOPPED = TrialFlag(kind="broke-container", message="killed PID 1", evidence="container-state.txt")
ENV = failure("environment", retryable=True)


def _never_asked() -> TrialFlag | None:
    raise AssertionError("Docker's evidence of the agent's doing was read for a row that does not need it")


def ev(**kw) -> TrialEvidence:
    return TrialEvidence(**{"harness_kind": "reference", "agents_doing": _never_asked, **kw})


CASES = {
    "tbflow-bug": ev(failure=failure("internal"), agent=agent(), verifier=verifier()),
    "environment-retried": ev(failure=ENV, retries_left=1),
    "harness-failed": ev(failure=failure("harness")),
    "environment-failed": ev(failure=ENV, retries_left=0),
    "no-agent-evidence": ev(),
    "model-not-reached": ev(harness_kind="model", agent=agent(tokens=0), verifier=verifier()),
    "broke-container": ev(agent=agent(), verifier=verifier(None, problem="no reward"), broke=BROKE),
    "no-verifier-evidence": ev(agent=agent()),
    "verifier-timed-out": ev(agent=agent(), verifier=verifier(None, timed_out=True)),
    "verifier-no-reward": ev(agent=agent(), verifier=verifier(None, problem="reward.txt is empty")),
    "scored": ev(agent=agent(), verifier=verifier(0.5)),
}

EXPECTED = {  # row -> (status, kind, reward, retried)
    "tbflow-bug": ("error", None, None, False),
    "environment-retried": ("invalid", "environment", None, True),
    "harness-failed": ("invalid", "harness", None, False),
    "environment-failed": ("invalid", "environment", None, False),
    "no-agent-evidence": ("invalid", "environment", None, False),
    "model-not-reached": ("invalid", "harness", None, False),
    "broke-container": ("scored", None, 0.0, False),
    "no-verifier-evidence": ("invalid", "environment", None, False),
    "verifier-timed-out": ("invalid", "verifier", None, False),
    "verifier-no-reward": ("invalid", "verifier", None, False),
    "scored": ("scored", None, 0.5, False),
}


@pytest.mark.parametrize("row", list(CASES))
def test_each_row_holds_for_its_case_and_gives_its_verdict(row):
    v = decide(CASES[row])
    assert v.row == row, v
    assert (v.validity.status, v.validity.kind, v.validity.reward, v.retry) == EXPECTED[row]
    assert retried(CASES[row]) == v.retry, "the stage's question and the trial's verdict disagree"


def test_every_row_has_a_case_and_a_message_and_no_message_is_left_over():
    names = [r.name for r in ROWS]
    assert names == list(CASES) == list(EXPECTED)
    assert set(MESSAGES) == set(names)
    assert [r.name for r in ROWS if r.retry] == [RETRY_ROW], "one row retries, and the stage reads down to it"


#: adjacent rows that can both hold: (earlier, later, evidence for which both predicates hold)
BOTH_HOLD = [
    ("environment-failed", "no-agent-evidence", ev(failure=ENV)),
    ("no-agent-evidence", "model-not-reached", ev(harness_kind="model")),
    ("model-not-reached", "broke-container", ev(harness_kind="model", agent=agent(), verifier=verifier(), broke=BROKE)),
    ("broke-container", "no-verifier-evidence", ev(agent=agent(), broke=BROKE)),
    ("verifier-timed-out", "verifier-no-reward", ev(agent=agent(), verifier=verifier(None, timed_out=True))),
    ("verifier-no-reward", "scored", CASES["verifier-no-reward"]),
]
#: adjacent rows that cannot both hold, and why
EXCLUSIVE = {
    ("tbflow-bug", "environment-retried"): "a failure has one kind",
    ("environment-retried", "harness-failed"): "a failure has one kind",
    ("harness-failed", "environment-failed"): "a failure has one kind",
    ("no-verifier-evidence", "verifier-timed-out"): "a timeout is verifier evidence",
}


@pytest.mark.parametrize("earlier,later,e", BOTH_HOLD, ids=[f"{a}>{b}" for a, b, _ in BOTH_HOLD])
def test_when_two_adjacent_rows_hold_the_earlier_wins(earlier, later, e):
    rows = {r.name: r for r in ROWS}
    assert rows[earlier].when(e) and rows[later].when(e)
    assert decide(e).row == earlier


def test_every_adjacent_pair_is_tested_for_precedence_or_named_exclusive():
    names = [r.name for r in ROWS]
    pairs = set(zip(names, names[1:], strict=False))
    assert pairs == {(a, b) for a, b, _ in BOTH_HOLD} | set(EXCLUSIVE)


def test_a_tbflow_bug_is_never_retried_even_if_its_failure_read_retryable():
    bug = StageFailure(failure("internal").error, retryable=True, cause="tbflow-bug")
    assert (decide(ev(failure=bug, retries_left=3)).row, retried(ev(failure=bug, retries_left=3))) == ("tbflow-bug", False)


def test_the_last_try_is_recorded_and_the_one_before_it_retried():
    assert decide(ev(failure=ENV, retries_left=1)).retry
    last = decide(ev(failure=ENV, retries_left=0))
    assert (last.row, last.retry, last.error) == ("environment-failed", False, ENV.error)


def test_a_failure_a_new_try_cannot_mend_is_recorded_with_retries_left():
    assert decide(ev(failure=failure("environment", retryable=False), retries_left=3)).row == "environment-failed"


def test_a_recorded_failure_after_earlier_tries_says_how_many_and_a_first_try_does_not():
    assert decide(ev(failure=ENV, earlier_tries=2)).validity.reason == "run-verifier: environment boom (after 3 tries)"
    assert decide(ev(failure=ENV, earlier_tries=0)).validity.reason == "run-verifier: environment boom"
    assert "after" not in (decide(ev(agent=agent(), verifier=verifier(None), earlier_tries=2)).validity.reason or "")


def test_one_token_in_the_cli_log_or_one_answered_gateway_response_reaches_the_model():
    model = dict(harness_kind="model", verifier=verifier())
    assert decide(ev(agent=agent(tokens=1), **model)).validity.reached_model_by == "cli_log"
    answered = GatewayUsage(requests=3, responses_with_usage=1, input_tokens=1)
    assert decide(ev(agent=agent(gateway_usage=answered), **model)).validity.reached_model_by == "gateway"
    errors_only = GatewayUsage(requests=3, responses_with_usage=0, input_tokens=5, errors={401: 3})
    v = decide(ev(agent=agent(gateway_usage=errors_only), **model))
    assert v.row == "model-not-reached" and "3× HTTP 401" in (v.validity.reason or "")


def test_an_environment_failure_after_the_agent_that_docker_shows_it_caused_is_its_result_not_retried():
    e = ev(failure=ENV, agent_returned=True, agents_doing=lambda: STOPPED, retries_left=2, agent=agent())
    v = decide(e)
    assert (v.row, v.retry, v.error, v.broke) == ("broke-container", False, None, STOPPED)
    assert (v.validity.reward, v.validity.evidence) == (0.0, "container-state.txt")
    assert not retried(e)
    model = decide(ev(failure=ENV, agent_returned=True, agents_doing=lambda: STOPPED, harness_kind="model", agent=agent()))
    assert (model.row, model.error) == ("model-not-reached", None), "a harness that never reached the model says nothing"


def test_an_environment_failure_after_the_agent_that_docker_does_not_put_on_it_is_retried():
    e = ev(failure=ENV, agent_returned=True, agents_doing=lambda: None, retries_left=1, agent=agent())
    assert decide(e).row == "environment-retried" and retried(e)


def test_a_docker_api_error_after_the_agent_is_never_the_agents_and_docker_is_not_asked():
    api = failure("environment", retryable=True, cause="docker-api")
    assert decide(ev(failure=api, agent_returned=True, retries_left=1)).row == "environment-retried"
    assert decide(ev(failure=api, agent_returned=True, retries_left=0)).row == "environment-failed"


def test_a_stage_asking_whether_it_is_retried_reads_no_docker_evidence_for_a_failure_it_cannot_change():
    """Down to the retry row only: an unretryable failure after the agent never reads Docker."""
    assert not retried(ev(failure=failure("environment", retryable=False), agent_returned=True, retries_left=2))
    assert not retried(ev(failure=ENV, agent_returned=True, retries_left=0))


def test_the_record_carries_the_stages_flag_only_without_an_error():
    assert decide(ev(failure=failure("harness"), broke=BROKE)).broke is None
    assert decide(CASES["broke-container"]).broke == BROKE


def test_architecture_doc_trial_table_names_the_same_rows_in_the_same_order():
    page = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()
    section = page.split("<!-- trial-verdict-table -->")[1].strip().split("\n\n")[0]
    names = re.findall(r"^\| `([a-z.-]+)` \|", section, re.M)
    assert names == [r.name for r in ROWS]
