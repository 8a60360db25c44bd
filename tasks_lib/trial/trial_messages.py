"""The reasons of the trial's verdict table (``trial_verdict.py``), kept apart from its predicates:
row name → (reason, evidence file) read from the evidence. A row's wording can change here without
touching when it holds; a test checks both name the same rows."""

from __future__ import annotations

from collections.abc import Callable

from tasks_lib.records.record_models import AgentOutcome, StageError, TrialFlag, VerifierOutcome
from tasks_lib.trial.trial_evidence import TrialEvidence

Message = tuple[str | None, str | None]


def _failure(e: TrialEvidence) -> StageError:
    assert e.failure is not None, "a row of a failed stage"
    return e.failure.error


def _agent(e: TrialEvidence) -> AgentOutcome:
    assert e.agent is not None, "a row past no-agent-evidence"
    return e.agent


def _verifier(e: TrialEvidence) -> VerifierOutcome:
    assert e.verifier is not None, "a row past no-verifier-evidence"
    return e.verifier


def _broke(e: TrialEvidence) -> TrialFlag:
    flag = e.broke_flag
    assert flag is not None, "the broke-container row"
    return flag


def _tbflow_bug(e: TrialEvidence) -> Message:
    err = _failure(e)
    return f"internal error, see {err.evidence or 'error.txt'}: {err.message}", err.evidence


def _stage_failed(e: TrialEvidence) -> Message:
    err = _failure(e)
    return f"{err.stage}: {err.message}", err.evidence


def no_model_reason(agent: AgentOutcome) -> str:
    """Why a model harness counts as never having reached the model, with what the gateway saw."""
    how = "timed out" if agent.timed_out else f"exited {agent.exit_code}"
    gw = agent.gateway_usage
    seen = ""
    if gw is not None and gw.requests:
        errors = ", ".join(f"{n}× HTTP {code}" for code, n in sorted(gw.errors.items()))
        seen = f"; the gateway saw {gw.requests} request(s), none answered with tokens" + (
            f" ({errors})" if errors else "")
    reason = f"harness never reached the model (0 tokens in its event log{seen}; it {how})"
    return f"{reason}: {agent.error_line}" if agent.error_line else reason


def _model_not_reached(e: TrialEvidence) -> Message:
    agent = _agent(e)
    return no_model_reason(agent), agent.stderr_log or agent.stdout_log


def _broke_container(e: TrialEvidence) -> Message:
    flag = _broke(e)
    return f"the agent broke its container: {flag.message}", flag.evidence


MESSAGES: dict[str, Callable[[TrialEvidence], Message]] = {
    "tbflow-bug": _tbflow_bug,
    "environment-retried": _stage_failed,
    "harness-failed": _stage_failed,
    "environment-failed": _stage_failed,
    "no-agent-evidence": lambda e: ("trial ended without agent evidence", None),
    "model-not-reached": _model_not_reached,
    "broke-container": _broke_container,
    "no-verifier-evidence": lambda e: ("trial ended without verifier evidence", None),
    "verifier-timed-out": lambda e: (f"verifier timed out after {_verifier(e).timeout_sec:g}s",
                                     _verifier(e).stdout_log),
    "verifier-no-reward": lambda e: (_verifier(e).problem or "no reward", _verifier(e).stdout_log),
    "scored": lambda e: (None, None),
}
