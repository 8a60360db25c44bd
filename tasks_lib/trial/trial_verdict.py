"""The trial's verdict as one ordered table of named predicates over the evidence its six stages
collected (pure: no Docker, no files). The first row that holds decides; docs/architecture.md §3
carries the rows as a reader's table, and a test checks both name the same rows.

The evidence (``TrialEvidence``, ``trial_evidence.py``) is what the six stages collected: the
typed failure of a stage, whether the agent stage returned, Docker's evidence that the agent broke
its own container (read at most once a try, and only by a row that needs it), the retries left, the
agent's and the verifier's outcomes, what the stages found the agent broke, the tries before.

Order matters and is deliberate: a bug in tbflow says nothing about anything, so it is its own
outcome (``error``); a failure of the environment says nothing about the agent, so it is retried
while retries are left, and wins next with the harness's own failures; an environment failure once
the agent ran is the agent's result instead when Docker's evidence shows it stopped its own
container (``container_health``). Then a model harness that never reached the model says nothing
about the model; then an agent that broke what the verifier needs has produced its own result
(scored 0, flagged); then a verifier that produced no trustworthy reward says nothing about the
work. Only a trial past all of these is scored, and then the reward stands whatever the agent's exit
code or timeout was. Tampering never changes the verdict: the reward is the one ``test.sh`` wrote
(docs/judge.md).

"Reached the model" has two witnesses (docs/judge.md): the CLI's own event log, and tbflow's
gateway, which relayed every model response of the trial. CLIs log usage only when a turn or step
completes, so one killed at the agent timeout in the middle of a long tool call or a slow second
turn logs none although the model answered; the gateway's count of successful responses with
tokens then decides. Errors alone (401, 429, 5xx: no successful response, so no tokens at the
gateway) never count as reaching the model.

The reasons are kept apart from the predicates (``trial_messages.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel

from tasks_lib.records.record_models import (AgentOutcome, HarnessKind, InvalidKind, StageError, TrialFlag, Validity,
                                             VerifierOutcome)
from tasks_lib.trial.stage_failures import StageFailure, typed_failure
from tasks_lib.trial.trial_evidence import AgentsDoing, TrialEvidence
from tasks_lib.trial.trial_messages import MESSAGES


@dataclass(frozen=True)
class Row:
    """One row: its name, when it holds, and the verdict it gives (the reason is ``MESSAGES[name]``)."""

    name: str
    when: Callable[[TrialEvidence], bool]
    status: Literal["scored", "invalid", "error"]
    kind: InvalidKind | None = None
    #: the trial tries again instead of recording this verdict
    retry: bool = False
    #: a scored row: "zero" (the agent's result) or "test.sh" (the reward test.sh wrote)
    reward: Literal["zero", "test.sh"] | None = None


ROWS: tuple[Row, ...] = (
    Row("tbflow-bug", lambda e: e.failed("internal"), "error"),
    Row("environment-retried", lambda e: e.failed("environment") and e.failure is not None and e.failure.retryable
        and e.retries_left > 0 and not e.agents_failure, "invalid", "environment", retry=True),
    Row("harness-failed", lambda e: e.failed("harness"), "invalid", "harness"),
    Row("environment-failed", lambda e: e.failed("environment") and not e.agents_failure, "invalid", "environment"),
    Row("no-agent-evidence", lambda e: e.agent is None, "invalid", "environment"),
    Row("model-not-reached", lambda e: e.harness_kind == "model" and e.witness is None, "invalid", "harness"),
    Row("broke-container", lambda e: e.broke_flag is not None, "scored", reward="zero"),
    Row("no-verifier-evidence", lambda e: e.verifier is None, "invalid", "environment"),
    Row("verifier-timed-out", lambda e: e.verifier is not None and e.verifier.timed_out, "invalid", "verifier"),
    Row("verifier-no-reward", lambda e: e.verifier is not None and e.verifier.reward is None, "invalid", "verifier"),
    Row("scored", lambda e: True, "scored", reward="test.sh"),
)

#: the rows a stage asks when it fails: whether its trial retries is decided by the end of this row
RETRY_ROW = "environment-retried"


class TrialVerdict(BaseModel):
    """What ``decide`` concluded for one try: retry it, or record this validity, error and flag."""

    row: str
    retry: bool = False
    validity: Validity
    #: the record's error (None when the failure was the agent's result)
    error: StageError | None = None
    #: the record's ``broke-container`` flag (only for a trial without an error)
    broke: TrialFlag | None = None


def decide(e: TrialEvidence) -> TrialVerdict:
    """The first row of ``ROWS`` that holds for ``e``."""
    row = next(r for r in ROWS if r.when(e))
    reason, evidence = MESSAGES[row.name](e)
    error = e.error
    if e.earlier_tries and error is not None:
        reason = f"{reason} (after {e.earlier_tries + 1} tries)"
    reward = 0.0 if row.reward == "zero" else e.verifier.reward if row.reward and e.verifier else None
    validity = Validity(status=row.status, kind=row.kind, reward=reward, reason=reason, evidence=evidence,
                        reached_model_by=e.witness if row.status == "scored" else None)
    return TrialVerdict(row=row.name, retry=row.retry, validity=validity, error=error,
                        broke=e.broke_flag if error is None else None)


def retried(e: TrialEvidence) -> bool:
    """Whether the trial tries again: ``decide(e).retry``, reading no row past ``RETRY_ROW`` (a
    stage asks it knowing only its failure, and Docker is read only when the answer depends on it)."""
    for row in ROWS:
        if row.when(e):
            return row.retry
        if row.name == RETRY_ROW:
            return False
    raise AssertionError(f"no row {RETRY_ROW}")


def retried_after(exc: BaseException, retries_left: int, agent_returned: bool, agents_doing: AgentsDoing) -> bool:
    """A stage's question, the trial's answer: does its trial try again after ``exc``? (A stop of
    the whole job aside, which leaves the trial unrecorded for a resume to run it again.)"""
    failure = typed_failure(exc)
    return failure is not None and retried(TrialEvidence(failure=failure, agent_returned=agent_returned,
                                                         agents_doing=agents_doing, retries_left=retries_left))


def classify(harness_kind: HarnessKind, error: StageError | None, agent: AgentOutcome | None,
             verifier: VerifierOutcome | None, broke: TrialFlag | None = None) -> Validity:
    """The validity of a recorded trial's evidence (its error already the record's, never retried)."""
    failure = StageFailure(error) if error is not None else None
    return decide(TrialEvidence(harness_kind, failure, agent_returned=agent is not None, agent=agent,
                                verifier=verifier, broke=broke)).validity
