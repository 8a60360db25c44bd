"""A trial's cost, and a sum of trials' costs, decided once and shown the same everywhere.

Why one module: the terminal, report.md, report.html, results.json and the Harbor export each read
a trial's cost; when each picked its own field, one trial page said "cost unknown" in its verdict
line (the CLI's figure, absent) and "$0.0008" below it (the price table's), and the export wrote
null. Every one of them now calls ``trial_cost`` and ``cost_text``.

The rule: the price table's cost over the gateway's per-call token counts
(``AgentOutcome.cost_usd``) when every call was priced; else the CLI's own figure when it gave one;
else 0 when the gateway saw no model call at all; else, when some calls were priced, a lower bound
("≥ $X, N calls unpriced": a call with unknown tokens or an unpriced model is never counted as 0);
else unknown. A sum over trials is partial as
soon as one of its trials is.
"""

from __future__ import annotations

import math
from typing import Iterable, Literal

from pydantic import BaseModel, Field

from tasks_lib.records.record_models import AgentOutcome


class TrialCost(BaseModel):
    """What is known of one trial's cost, or of a sum of trials' costs."""

    usd: float | None = Field(default=None, description=(
        "The known cost (USD); None when unknown or partial. For a sum: the known total, or None."))
    at_least_usd: float | None = Field(default=None, description=(
        "When the cost is partial: the sum of what was priced, a lower bound."))
    calls_unpriced: int = Field(default=0, description=(
        "Model calls left out of at_least_usd: unknown tokens, or a model without a price."))
    trials_unknown: int = Field(default=0, description="For a sum: trials with no cost at all.")
    source: Literal["prices", "harness", "none", "mixed"] = Field(default="none", description=(
        "prices: the price table over the gateway's counts; harness: the CLI's own figure."))


def trial_cost(agent: AgentOutcome | None) -> TrialCost:
    """The trial's cost by the module's rule."""
    if agent is None:
        return TrialCost()
    if agent.cost_usd is not None:
        return TrialCost(usd=agent.cost_usd, source="prices")
    if agent.usage is not None and agent.usage.cost_usd is not None:
        return TrialCost(usd=agent.usage.cost_usd, source="harness")
    if agent.gateway_usage is not None and agent.gateway_usage.requests == 0:
        return TrialCost(usd=0.0, source="prices")  # the gateway saw no model call: measured, not made up
    if agent.cost_priced_usd is not None and agent.calls_unpriced:
        return TrialCost(at_least_usd=agent.cost_priced_usd, calls_unpriced=agent.calls_unpriced, source="prices")
    return TrialCost()


def total_cost(costs: Iterable[TrialCost]) -> TrialCost:
    """The sum of trials' costs: known only when every trial's is; else the lower bound, with the
    unpriced calls and the trials of unknown cost counted."""
    costs = list(costs)
    parts = [c.usd if c.usd is not None else c.at_least_usd for c in costs]
    known = [p for p in parts if p is not None]
    unpriced = sum(c.calls_unpriced for c in costs)
    unknown = sum(1 for p in parts if p is None)
    sources = {c.source for c in costs if c.source != "none"}
    source = sources.pop() if len(sources) == 1 else ("mixed" if sources else "none")
    if not known:
        return TrialCost(trials_unknown=unknown, source=source)
    total = math.fsum(known)
    if not unpriced and not unknown:
        return TrialCost(usd=total, source=source)
    return TrialCost(at_least_usd=total, calls_unpriced=unpriced, trials_unknown=unknown, source=source)


def cost_text(cost: TrialCost) -> str:
    """``$0.1234``; ``≥ $0.1234, 2 calls unpriced`` (and ``, 1 trial unknown``); ``unknown``."""
    if cost.usd is not None:
        return f"${cost.usd:,.4f}"
    if cost.at_least_usd is None:
        return "unknown"
    parts = [f"≥ ${cost.at_least_usd:,.4f}"]
    if cost.calls_unpriced:
        parts.append(f"{cost.calls_unpriced} call{'s' if cost.calls_unpriced != 1 else ''} unpriced")
    if cost.trials_unknown:
        parts.append(f"{cost.trials_unknown} trial{'s' if cost.trials_unknown != 1 else ''} unknown")
    return ", ".join(parts)


def trial_tokens(agent: AgentOutcome | None) -> tuple[int | None, int | None]:
    """(input, output) tokens of the trial: the gateway's count, which its cost is priced from,
    when it saw usage; else the CLI's own; else unknown."""
    gw = agent.gateway_usage if agent is not None else None
    if gw is not None and gw.responses_with_usage:
        return gw.input_tokens, gw.output_tokens
    usage = agent.usage if agent is not None else None
    if usage is not None and (usage.input_tokens or usage.output_tokens):
        return usage.input_tokens, usage.output_tokens
    return None, None
