"""An ATIF trajectory (``trials/<trial>/trajectory.json``) made into what a trial page shows (pure).

The file is read as plain JSON, not through a strict model: a page must still show what it can
of a trajectory from a newer ATIF minor version or a partly written one, and say when it cannot.
Every text is cut to a size (``TEXT_CHARS``) and the whole page to a budget (``PAGE_TEXT_BUDGET``
characters of trajectory text): a 500-step agent with megabytes of tool output still opens at
once; the full text stays in the trial's ``trajectory.json``, which the page names.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

#: the most characters of one message, reasoning, tool-call argument block or tool output shown
TEXT_CHARS = 8_000
#: the most characters of trajectory text on one trial page (about 1.5 MB of HTML at most)
PAGE_TEXT_BUDGET = 1_200_000


class ToolCallView(BaseModel):
    call_id: str
    name: str
    arguments: str
    output: str | None = None
    output_chars: int = 0


class StepView(BaseModel):
    step_id: int | str
    source: str
    message: str = ""
    reasoning: str = ""
    tool_calls: list[ToolCallView] = []
    other_outputs: list[str] = []
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    cut: bool = False


class TrajectoryView(BaseModel):
    schema_version: str = ""
    agent: str = ""
    model: str = ""
    steps: list[StepView] = []
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cost_usd: float | None = None
    omitted_steps: int = 0
    problem: str | None = None


class _Budget:
    def __init__(self, chars: int) -> None:
        self.left = chars

    def take(self, text: str) -> tuple[str, bool]:
        """``text`` cut to ``TEXT_CHARS`` and to what is left of the page's budget."""
        limit = max(0, min(TEXT_CHARS, self.left))
        shown = text[:limit]
        self.left -= len(shown)
        if len(text) > limit:
            shown += f"\n[… {len(text) - limit:,} more characters in trajectory.json]"
        return shown, len(text) > limit


def _text(content: Any) -> str:
    """A message or observation: a string, or ATIF content parts (text kept, images named)."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(p.get("text", "") if isinstance(p, dict) and p.get("type") == "text"
                         else f"[{p.get('type', 'part')}]" if isinstance(p, dict) else str(p) for p in content)
    return json.dumps(content, ensure_ascii=False, sort_keys=True)


def _dict(v: Any) -> dict:
    return v if isinstance(v, dict) else {}


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _num(v: Any) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _step(raw: dict, budget: _Budget) -> StepView:
    metrics = _dict(raw.get("metrics"))
    message, cut1 = budget.take(_text(raw.get("message")))
    reasoning, cut2 = budget.take(_text(raw.get("reasoning_content")))
    outputs: dict[str, str] = {}
    unlinked: list[str] = []
    obs = _dict(raw.get("observation"))
    for res in obs.get("results") or []:
        if not isinstance(res, dict):
            continue
        text = _text(res.get("content"))
        if res.get("source_call_id") is not None:
            outputs[str(res["source_call_id"])] = text
        else:
            unlinked.append(text)
    calls, cut = [], cut1 or cut2
    for c in raw.get("tool_calls") or []:
        if not isinstance(c, dict):
            continue
        args, cut_a = budget.take(json.dumps(c.get("arguments"), ensure_ascii=False, indent=1, sort_keys=True))
        full = outputs.pop(str(c.get("tool_call_id")), None)
        out, cut_o = budget.take(full) if full is not None else (None, False)
        cut = cut or cut_a or cut_o
        calls.append(ToolCallView(call_id=str(c.get("tool_call_id", "")), name=str(c.get("function_name", "")),
                                  arguments=args, output=out, output_chars=len(full or "")))
    others = [budget.take(t)[0] for t in [*outputs.values(), *unlinked]]
    return StepView(step_id=raw.get("step_id", "?"), source=str(raw.get("source", "?")), message=message,
                    reasoning=reasoning, tool_calls=calls, other_outputs=others,
                    prompt_tokens=_int(metrics.get("prompt_tokens")),
                    completion_tokens=_int(metrics.get("completion_tokens")),
                    cached_tokens=_int(metrics.get("cached_tokens")), cost_usd=_num(metrics.get("cost_usd")),
                    cut=cut)


def trajectory_view(text: str | None, budget_chars: int = PAGE_TEXT_BUDGET) -> TrajectoryView | None:
    """None when no trajectory was recorded; a view with ``problem`` when the file is unreadable."""
    if text is None:
        return None
    try:
        data = json.loads(text)
    except ValueError as exc:
        return TrajectoryView(problem=f"trajectory.json is not JSON: {exc}")
    if not isinstance(data, dict) or not isinstance(data.get("steps"), list):
        return TrajectoryView(problem="trajectory.json has no steps list (not an ATIF trajectory)")
    budget = _Budget(budget_chars)
    steps: list[StepView] = []
    raw_steps = [s for s in data["steps"] if isinstance(s, dict)]
    for raw in raw_steps:
        if budget.left <= 0:
            break
        steps.append(_step(raw, budget))
    agent, final = _dict(data.get("agent")), _dict(data.get("final_metrics"))
    return TrajectoryView(
        schema_version=str(data.get("schema_version", "")),
        agent=f"{agent.get('name', '')} {agent.get('version', '')}".strip(),
        model=str(agent.get("model_name") or ""), steps=steps, omitted_steps=len(raw_steps) - len(steps),
        total_prompt_tokens=_int(final.get("total_prompt_tokens")),
        total_completion_tokens=_int(final.get("total_completion_tokens")),
        total_cost_usd=_num(final.get("total_cost_usd")))
