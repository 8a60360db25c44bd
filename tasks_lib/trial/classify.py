"""The validity rules (docs/architecture.md §3) as one pure function of the recorded evidence.

Order matters and is deliberate: a failure of the environment says nothing about the agent, so
it wins; then a model harness that never reached the model says nothing about the model; then a
verifier that produced no trustworthy reward says nothing about the work. Only a trial past all
three is scored, and then the reward stands whatever the agent's exit code or timeout was.
"""

from __future__ import annotations

from tasks_lib.job.records import AgentOutcome, HarnessKind, StageError, Validity, VerifierOutcome


def classify(
    harness_kind: HarnessKind,
    error: StageError | None,
    agent: AgentOutcome | None,
    verifier: VerifierOutcome | None,
) -> Validity:
    if error is not None:
        return Validity(status="invalid", kind=error.kind, reason=f"{error.stage}: {error.message}",
                        evidence=error.evidence)
    if agent is None or verifier is None:
        return Validity(status="invalid", kind="environment",
                        reason="trial ended without agent or verifier evidence", evidence=None)
    if harness_kind == "model":
        tokens = agent.usage.total_tokens if agent.usage else 0
        if tokens <= 0:
            return Validity(status="invalid", kind="harness",
                            reason=_no_model_reason(agent), evidence=agent.stderr_log or agent.stdout_log)
    if verifier.tampered:
        return Validity(status="invalid", kind="verifier", reason=verifier.problem or "reward file changed after test.sh exited",
                        evidence=verifier.stdout_log)
    if verifier.timed_out:
        return Validity(status="invalid", kind="verifier",
                        reason=f"verifier timed out after {verifier.timeout_sec:g}s", evidence=verifier.stdout_log)
    if verifier.reward is None:
        return Validity(status="invalid", kind="verifier", reason=verifier.problem or "no reward",
                        evidence=verifier.stdout_log)
    return Validity(status="scored", reward=verifier.reward)


def _no_model_reason(agent: AgentOutcome) -> str:
    how = "timed out" if agent.timed_out else f"exited {agent.exit_code}"
    reason = f"harness never reached the model (0 tokens in its event log; it {how})"
    return f"{reason}: {agent.error_line}" if agent.error_line else reason
