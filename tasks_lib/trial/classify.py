"""The validity rules (docs/architecture.md §3) as one pure function of the recorded evidence.

Order matters and is deliberate: a bug in tbflow says nothing about anything, so it is its own
outcome (``error``); a failure of the environment says nothing about the agent, so it wins next;
then a model harness that never reached the model says nothing about the model; then an agent
that broke what the verifier needs has produced its own result (scored 0, flagged); then a
verifier that produced no trustworthy reward says nothing about the work. Only a trial past all
of these is scored, and then the reward stands whatever the agent's exit code or timeout was.
Tampering never changes the verdict: the reward is the one ``test.sh`` wrote (docs/judge.md).

"Reached the model" has two witnesses (docs/judge.md): the
CLI's own event log, and tbflow's gateway, which relayed every model response of the trial. CLIs
log usage only when a turn or step completes, so one killed at the agent timeout in the middle
of a long tool call or a slow second turn logs none although the model answered; the gateway's
count of successful responses with tokens then decides. Errors alone (401, 429, 5xx: no
successful response, so no tokens at the gateway) never count as reaching the model.
"""

from __future__ import annotations

from typing import Literal

from tasks_lib.records.record_models import (AgentOutcome, HarnessKind, InvalidKind, StageError, TrialFlag, Validity,
                                             VerifierOutcome)


def classify(
    harness_kind: HarnessKind,
    error: StageError | None,
    agent: AgentOutcome | None,
    verifier: VerifierOutcome | None,
    broke: TrialFlag | None = None,
) -> Validity:
    if error is not None and error.kind == "internal":
        return Validity(status="error", reason=f"internal error, see {error.evidence or 'error.txt'}: {error.message}",
                        evidence=error.evidence)
    if error is not None:
        kind: InvalidKind = "harness" if error.kind == "harness" else "environment"
        return Validity(status="invalid", kind=kind, reason=f"{error.stage}: {error.message}", evidence=error.evidence)
    if agent is None:
        return Validity(status="invalid", kind="environment",
                        reason="trial ended without agent evidence", evidence=None)
    witness = None
    if harness_kind == "model":
        witness = reached_model_by(agent)
        if witness is None:
            return Validity(status="invalid", kind="harness",
                            reason=_no_model_reason(agent), evidence=agent.stderr_log or agent.stdout_log)
    if broke is not None:
        return Validity(status="scored", reward=0.0, reason=f"the agent broke its container: {broke.message}",
                        evidence=broke.evidence, reached_model_by=witness)
    if verifier is None:
        return Validity(status="invalid", kind="environment",
                        reason="trial ended without verifier evidence", evidence=None)
    if verifier.timed_out:
        return Validity(status="invalid", kind="verifier",
                        reason=f"verifier timed out after {verifier.timeout_sec:g}s", evidence=verifier.stdout_log)
    if verifier.reward is None:
        return Validity(status="invalid", kind="verifier", reason=verifier.problem or "no reward",
                        evidence=verifier.stdout_log)
    return Validity(status="scored", reward=verifier.reward, reached_model_by=witness)


def reached_model_by(agent: AgentOutcome) -> Literal["cli_log", "gateway"] | None:
    """Which witness shows the harness reached the model: its own log first, else the gateway."""
    if agent.usage is not None and agent.usage.total_tokens > 0:
        return "cli_log"
    gw = agent.gateway_usage
    if gw is not None and gw.responses_with_usage > 0 and gw.total_tokens > 0:
        return "gateway"
    return None


def _no_model_reason(agent: AgentOutcome) -> str:
    how = "timed out" if agent.timed_out else f"exited {agent.exit_code}"
    gw = agent.gateway_usage
    seen = ""
    if gw is not None and gw.requests:
        errors = ", ".join(f"{n}× HTTP {code}" for code, n in sorted(gw.errors.items()))
        seen = f"; the gateway saw {gw.requests} request(s), none answered with tokens" + (
            f" ({errors})" if errors else "")
    reason = f"harness never reached the model (0 tokens in its event log{seen}; it {how})"
    return f"{reason}: {agent.error_line}" if agent.error_line else reason
