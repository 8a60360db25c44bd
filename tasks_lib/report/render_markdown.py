"""Render ``Results`` as the Markdown report (``tasks_lib/report/templates/report.md.j2``).

The layout lives in the template; this module only supplies formatting filters and a few derived
views. Two targets with different HTML support:

* **GitHub** (``report.md``): long sections (more than ``FOLD_OVER`` rows) go into
  ``<details>`` blocks so a 100-task report still opens on its summary.
* **Prefect UI** (the markdown artifact): its renderer turns each raw-HTML block into its own
  element, so a ``<details>`` would show as an empty toggle followed by the table. It therefore
  gets ``collapsible=False``: the same content under plain headings.

Record text is escaped by the shared filters in ``tasks_lib.report.md_format``.
"""

from __future__ import annotations

from collections import Counter
from functools import lru_cache

import jinja2

from tasks_lib.container.container_outcomes import LISTED_LOG_ENTRIES
from tasks_lib.records.trial_cost import cost_text
from tasks_lib.report.results_model import HarnessSummary, Results, TaskResult, TrialResult
from tasks_lib.report.templating import make_environment, render
from tasks_lib.text_clean import shorten

FOLD_OVER = 20
REASON_CHARS = 300


def timeouts(values: list[float]) -> str:
    if not values:
        return "n/a"
    if len(values) == 1:
        return f"{values[0]:g}s"
    return f"{values[0]:g}–{values[-1]:g}s (varies by task)"


def tokens(value: int | None, summary: HarnessSummary) -> str:
    """Token count; "—" for a reference harness (no model), "unknown" when none was reported."""
    if value is None:
        return "—" if summary.harness_kind == "reference" else "unknown"
    partial = summary.usage_trials < summary.trials
    return f"{value:,}" + (f" ({summary.usage_trials} of {summary.trials} trials)" if partial else "")


def cost(summary: HarnessSummary | TrialResult) -> str:
    """A harness's or a trial's cost, as every report shows it (``trial_cost.cost_text``): "unknown"
    when none is known (never 0), "≥ $X, N calls unpriced" when partial."""
    return cost_text(summary.cost)


def count(value: int | None) -> str:
    """A trial's token count; "unknown" when not reported."""
    return f"{value:,}" if value is not None else "unknown"


def cell(c) -> str:  # noqa: ANN001  (AttemptCell)
    """One attempt in a per-task table."""
    if c.status == "missing":
        return "—"
    if c.status == "invalid":
        return f"⚠️ {c.kind or 'invalid'}"
    if c.status == "error":
        return "⛔ tbflow error"
    if c.reward >= 1:
        return f"✅ {c.reward:g}"
    if c.reward <= 0:
        return f"❌ {c.reward:g}"
    return f"◐ {c.reward:.2f}"


def headline(s: HarnessSummary) -> str:
    """One sentence per harness for the top of the report (numbers only; names are escaped by the caller)."""
    invalid = _invalid_words(s)
    if s.trials == 0:
        return "no trial recorded"
    if s.scored == 0:
        return f"**no scored trial**, so no mean reward; {invalid}"
    ci = (f" (95% CI {s.reward_interval.low:.3f}–{s.reward_interval.high:.3f})"
          if s.reward_interval else "")
    errors = f"; **{s.errors} tbflow error(s)**" if s.errors else ""
    flagged = f"; {s.flagged} flagged" if s.flagged else ""
    return (f"mean reward **{s.mean_reward:.3f}**{ci} over **{s.scored}** scored of {s.trials} trials; "
            f"{s.passed} passed; {invalid}{errors}{flagged}")


def _invalid_words(s: HarnessSummary) -> str:
    if s.invalid == 0:
        return "0 invalid"
    parts = [f"{n} {k}" for k, n in s.invalid_by_kind.model_dump().items() if n]
    return f"{s.invalid} invalid ({', '.join(parts)})"


def invalid_trials(results: Results) -> list[TrialResult]:
    """Every invalid trial, grouped by kind, then harness, task and attempt."""
    order = {"environment": 0, "verifier": 1, "harness": 2, "interrupted": 3}
    bad = [t for t in results.trials if t.record.validity.status == "invalid"]
    return sorted(bad, key=lambda t: (order.get(t.record.validity.kind or "", 9), t.record.spec.harness,
                                      t.record.spec.task_name, t.record.spec.attempt))


def invalid_causes(trials: list[TrialResult], top: int = 8) -> list[tuple[str, int]]:
    """The most common causes: kind and stage (the reason up to its first colon)."""
    def cause(t: TrialResult) -> str:
        v = t.record.validity
        reason = v.reason or ""
        stage = reason.split(":", 1)[0] if ":" in reason else reason
        return f"{v.kind or 'invalid'} · {shorten(stage, 60)}"

    return Counter(cause(t) for t in trials).most_common(top)


def _mib(n: int) -> str:
    return f"{n / (1024 * 1024):,.1f} MiB"


#: log entries named one by one per trial in the notes; the rest are counted
SHOWN = 5


def trial_notes(results: Results) -> list[tuple[TrialResult, list[str]]]:
    """Trials whose record says something a reader of the score should know, with what it says:
    the gateway (not the CLI's own log) showed the harness reached the model; log entries were
    skipped or log files cut when the logs came out of the container."""
    out = []
    for t in results.trials:
        rec, notes = t.record, []
        if rec.validity.reached_model_by == "gateway":
            gw = rec.agent.gateway_usage if rec.agent else None
            tokens = f" ({gw.total_tokens:,} tokens in {gw.responses_with_usage} response(s))" if gw else ""
            notes.append(f"reached the model per the gateway{tokens}; the CLI's log shows no usage "
                         "(it was cut off before logging it)")
        if rec.logs:  # counts first: the table cell is cut at a fixed length
            logs = rec.logs
            notes += [f"{d.entries} log entries ({_mib(d.bytes)}) not copied: {d.reason}" for d in logs.dropped]
            notes += [f"log {c.path} cut at {_mib(c.kept_bytes)} of {_mib(c.size_bytes)}" for c in logs.cut[:SHOWN]]
            skipped = len(logs.skipped) + logs.skipped_unlisted
            more_cut = len(logs.cut) - len(logs.cut[:SHOWN]) + logs.cut_unlisted
            if more_cut:
                notes.append(f"{more_cut} more log files cut (trial.json lists up to {LISTED_LOG_ENTRIES})")
            notes += [f"log entry {e.path} skipped: {e.reason}" for e in logs.skipped[:SHOWN]]
            if skipped > SHOWN:
                notes.append(f"{skipped - SHOWN} more log entries skipped (trial.json lists up to "
                             f"{LISTED_LOG_ENTRIES})")
        if notes:
            out.append((t, notes))
    return out


def task_groups(results: Results) -> list[tuple[HarnessSummary, list[TaskResult], str]]:
    """Per harness: its task rows and a one-line digest for the section's summary."""
    out = []
    for s in results.summaries:
        rows = [r for r in results.tasks if r.harness == s.harness]
        all_pass = sum(1 for r in rows if r.scored and r.passed == r.scored and not r.invalid)
        failing = sum(1 for r in rows if r.scored > r.passed)
        with_invalid = sum(1 for r in rows if r.invalid)
        digest = (f"{len(rows)} tasks: {all_pass} passed every attempt, {failing} with a failed attempt, "
                  f"{with_invalid} with an invalid attempt")
        out.append((s, rows, digest))
    return out


@lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    return make_environment({"timeouts": timeouts, "cell": cell, "cost": cost, "tokens": tokens,
                             "headline": headline, "count": count})


def render_markdown(results: Results, collapsible: bool = True) -> str:
    """The report as Markdown; ``collapsible=False`` for renderers without ``<details>``."""
    bad = invalid_trials(results)
    extra_kinds = [k for k in ("interrupted", "unknown")
                   if any(getattr(s.invalid_by_kind, k) for s in results.summaries)]
    return render(
        _environment(), "report.md.j2",
        r=results,
        job=results.job,
        invalid=bad,
        errors=[t for t in results.trials if t.record.validity.status == "error"],
        flagged=[t for t in results.trials if t.record.flags],
        retried=[t for t in results.trials if t.record.previous_tries or t.record.env_retry_errors],
        causes=invalid_causes(bad) if len(bad) > 5 else [],
        extra_kinds=extra_kinds,
        ks=sorted({p.k for s in results.summaries for p in s.pass_at_k}),
        groups=task_groups(results),
        notes=trial_notes(results),
        fold=lambda n: collapsible and n > FOLD_OVER,
        reason_chars=REASON_CHARS,
    )
