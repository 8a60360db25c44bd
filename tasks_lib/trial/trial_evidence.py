"""What one try of a trial left, as its six stages collected it: the evidence the trial's verdict
table (``trial_verdict.py``) reads. Pure: Docker's evidence of what the agent did is a callable the
trial memoizes (``agents_doing``), so it is read at most once a try, and only when a row asks.

The fields: the failure a stage raised, typed (``stage_failures.py``); whether the agent stage had
returned; ``agents_doing``; the retries left; the agent's outcome; the verifier's outcome and what
the stages that returned found the agent broke (the run-verifier stage's own table,
``verdict_table.py``, the storage watch, a kill the agent blocked); how many tries came before.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from tasks_lib.records.record_models import AgentOutcome, HarnessKind, StageError, TrialFlag, VerifierOutcome
from tasks_lib.trial.stage_failures import StageFailure

#: Docker's evidence that the agent broke its own container (a flag), or None; read at most once a try
AgentsDoing = Callable[[], TrialFlag | None]


def _nothing_seen() -> TrialFlag | None:
    return None


@dataclass(frozen=True)
class TrialEvidence:
    """What one try of a trial left."""

    #: None where it is not known: a stage's own retry question reads no row that needs it
    harness_kind: HarnessKind | None = None
    failure: StageFailure | None = None
    agent_returned: bool = False
    agents_doing: AgentsDoing = _nothing_seen
    retries_left: int = 0
    agent: AgentOutcome | None = None
    verifier: VerifierOutcome | None = None
    #: what the stages that returned found the agent broke (its storage, the verifier's verdict, its processes)
    broke: TrialFlag | None = None
    earlier_tries: int = 0

    def failed(self, kind: str) -> bool:
        """A stage failed, with an error of this kind."""
        return self.failure is not None and self.failure.error.kind == kind

    @property
    def may_be_agents(self) -> bool:
        """The failure may be the agent's own result (``failure_may_be_agents``)."""
        return failure_may_be_agents(self.failure, self.agent_returned)

    @property
    def agents_failure(self) -> bool:
        """The failure is the agent's: Docker's evidence shows it stopped its own container
        (``container_health``)."""
        return self.may_be_agents and self.agents_doing() is not None

    @property
    def error(self) -> StageError | None:
        """The record's error: the failure's, unless it is the agent's result."""
        return None if self.failure is None or self.agents_failure else self.failure.error

    @property
    def broke_flag(self) -> TrialFlag | None:
        """The ``broke-container`` flag: Docker's, for a failure that is the agent's; else the stages'."""
        return self.agents_doing() if self.agents_failure else self.broke

    @property
    def witness(self) -> Literal["cli_log", "gateway"] | None:
        """How a model harness shows it reached the model (None for a reference harness, or none shows it)."""
        return reached_model_by(self.agent) if self.harness_kind == "model" and self.agent is not None else None


def failure_may_be_agents(failure: StageFailure | None, agent_returned: bool) -> bool:
    """An environment failure tbflow named (not a raw Docker API error, which is never the agent's)
    once the agent stage returned may be the agent's doing. The trial asks it too: it reads
    Docker's evidence then, while the container is there."""
    return agent_returned and failure is not None and failure.cause == "environment"


def reached_model_by(agent: AgentOutcome) -> Literal["cli_log", "gateway"] | None:
    """Which witness shows the harness reached the model: its own log first, else the gateway
    (CLIs log usage only when a turn completes; the gateway counts successful responses with
    tokens; errors alone never count)."""
    if agent.usage is not None and agent.usage.total_tokens > 0:
        return "cli_log"
    gw = agent.gateway_usage
    if gw is not None and gw.responses_with_usage > 0 and gw.total_tokens > 0:
        return "gateway"
    return None
