"""A trial's ATIF trajectory from its recorded model exchange: a pure function, any API.

Why from the exchange: it is what the model was actually sent and answered, recorded on the host
(``tasks_lib/gateway/exchange``), whatever harness ran. Shape (ATIF's usual one):

* the first request's system and user texts become ``system`` / ``user`` steps;
* each model call becomes one ``agent`` step: the reply's message, reasoning, tool calls, that
  call's tokens (the gateway's count) and its cost from the price table;
* the tool results a later request carries back become the ``observation`` of the agent step
  that made those calls; new user texts in a later request become ``user`` steps.

What is *new* in a request is found against the earlier request sharing the longest prefix of
history with it, so a side call (a title request) does not make the main conversation look new.
A call answered with an error (no reply) is a step only when the provider metered tokens for it.
A call whose request or reply did not parse (kept as bytes in the recording) is still a step, its
``extra`` naming what is missing and why (``request_unparsed``, ``reply_unparsed``, ``unrecorded``);
the steps around it are built as usual.
``final_metrics`` carries the trial's gateway usage, so it equals the trial record's. Its
``total_cost_usd`` is the sum of every call's cost only when every call was priced: a call whose
tokens are unknown (no usage in its reply) or whose model has no price makes it null, and
``extra`` then holds the priced calls' sum (a lower bound) and the count of unpriced calls.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from types import ModuleType
from typing import Iterable

from tasks_lib.gateway.exchange.exchange_model import ExchangeEntry
from tasks_lib.gateway.exchange.history_delta import common_prefix
from tasks_lib.gateway.gateway_usage import GatewayUsage
from tasks_lib.pricing.price_table import PriceTable, call_cost
from tasks_lib.trajectory import from_anthropic, from_chat, from_gemini, from_responses
from tasks_lib.trajectory.atif_models import (Agent, FinalMetrics, Metrics, Observation, ObservationResult, Step,
                                              ToolCall, Trajectory)
from tasks_lib.trajectory.call_parts import Item, Turn

CONVERTERS: dict[str, ModuleType] = {"openai-chat": from_chat, "openai-responses": from_responses,
                                     "anthropic-messages": from_anthropic, "gemini-generate-content": from_gemini}
#: ``final_metrics.extra`` keys when some call could not be priced: the priced calls' sum, and how many were not
COST_PRICED, CALLS_UNPRICED = "cost_usd_priced", "calls_unpriced"
#: how many earlier requests' histories are kept to find what is new in the next one
_WINDOW = 8


@dataclass
class _State:
    steps: list[Step] = field(default_factory=list)
    histories: list[list[Item]] = field(default_factory=list)
    by_call: dict[str, Step] = field(default_factory=dict)
    costs: list[float | None] = field(default_factory=list)


def build_trajectory(entries: Iterable[ExchangeEntry], agent: Agent, usage: GatewayUsage | None,
                     prices: PriceTable, session_id: str | None = None) -> Trajectory | None:
    """The trajectory of these entries; None when no model call was recorded (nothing to show)."""
    state = _State()
    for entry in entries:
        conv = CONVERTERS.get(entry.api)
        if conv is None or entry.method != "POST" or (entry.reply is None and not entry.input_tokens
                                                      and not entry.output_tokens):
            continue
        history = conv.items(entry.request) if isinstance(entry.request, dict) else []
        _new_inputs(state, history)
        _agent_step(state, entry, conv, prices, agent.model_name)
    if not any(s.source == "agent" for s in state.steps):
        return None
    priced = [c for c in state.costs if c is not None]
    unpriced = len(state.costs) - len(priced)
    cached = [s.metrics.cached_tokens for s in state.steps if s.metrics and s.metrics.cached_tokens is not None]
    final = FinalMetrics(
        total_prompt_tokens=usage.input_tokens if usage else None,
        total_completion_tokens=usage.output_tokens if usage else None,
        total_cached_tokens=sum(cached) if cached else None,
        total_cost_usd=math.fsum(priced) if not unpriced else None,
        total_steps=len(state.steps),
        # a lower bound is not a total: ATIF's total stays unknown, the bound is kept beside it
        extra={COST_PRICED: math.fsum(priced), CALLS_UNPRICED: unpriced} if unpriced else None)
    return Trajectory(session_id=session_id, agent=agent, steps=state.steps, final_metrics=final,
                      extra={"recorded_by": "tbflow gateway"})


def _new_inputs(state: _State, history: list[Item]) -> None:
    """Steps and observations for what ``history`` adds to the earlier request it continues."""
    shared = max((common_prefix(history, h) for h in state.histories), default=0)
    state.histories = (state.histories + [history])[-_WINDOW:]
    for item in history[shared:]:
        if item.role == "tool":
            _observe(state, item)
        elif item.role in ("system", "user") and (item.text or item.role == "user"):
            state.steps.append(Step(step_id=len(state.steps) + 1, source=item.role, message=item.text))


def _observe(state: _State, item: Item) -> None:
    call_id = item.call_id if item.call_id in state.by_call else item.call_name
    step = state.by_call.get(call_id or "")
    if step is None:  # a result of a call this recording never saw: shown, unlinked
        step = next((s for s in reversed(state.steps) if s.source == "agent"), None)
        if step is None:
            return
        result = ObservationResult(content=item.text, extra={"call_id": item.call_id})
    else:
        result = ObservationResult(source_call_id=call_id, content=item.text)
    if step.observation is None:
        step.observation = Observation(results=[])
    step.observation.results.append(result)


def _agent_step(state: _State, entry: ExchangeEntry, conv: ModuleType, prices: PriceTable,
                default_model: str | None) -> None:
    turn: Turn = conv.turn(entry.reply) if entry.reply is not None else Turn()
    model = turn.model or _requested_model(entry) or default_model
    prompt, completion = entry.input_tokens, entry.output_tokens
    cost = None
    if prompt is not None and completion is not None:
        cost = call_cost(prices.lookup(model), prompt, completion, turn.cache_read, turn.cache_write,
                         conv.PROMPT_INCLUDES_CACHE, turn.cache_write_1h)
    state.costs.append(cost)  # unknown tokens or an unpriced model: a call the total cannot cover
    extra: dict[str, object] = {"seq": entry.seq, "ms": entry.ms}
    if entry.status >= 400:
        extra.update(status=entry.status, error=entry.error)
    for mark in ("request_unparsed", "reply_unparsed", "unrecorded"):  # the step shows what it lacks
        if getattr(entry, mark):
            extra[mark] = getattr(entry, mark)
    step = Step(step_id=len(state.steps) + 1, timestamp=entry.started.isoformat(), source="agent", model_name=model,
                message=turn.message, reasoning_content=turn.reasoning, llm_call_count=1, extra=extra,
                tool_calls=[ToolCall(tool_call_id=c.call_id, function_name=c.name, arguments=c.arguments)
                            for c in turn.calls] or None,
                metrics=Metrics(prompt_tokens=prompt, completion_tokens=completion,
                                cached_tokens=turn.cache_read, cost_usd=cost))
    state.steps.append(step)
    for call in turn.calls:
        state.by_call[call.call_id] = step


def _requested_model(entry: ExchangeEntry) -> str | None:
    if isinstance(entry.request, dict) and isinstance(entry.request.get("model"), str):
        return entry.request["model"]
    if "/models/" in entry.path:  # Gemini names the model in the route
        return entry.path.split("/models/", 1)[1].split(":", 1)[0]
    return None
