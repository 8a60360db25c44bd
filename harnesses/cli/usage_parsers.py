"""Model usage and the failure line of each agent CLI, read from its own JSON event log only.

Whether a model harness "reached the model" is judged from usage in the CLI's stdout event log
(with tbflow's gateway as the second witness for a CLI cut off before it logged usage, see
``tasks_lib.trial.trial_verdict``), never from its exit code: pi exits 0 after a 401, codex never
exits when the endpoint is down. The rules follow docs/architecture.md §5. Across CLIs, ``Usage``
means the same thing:

* ``input_tokens`` = every prompt token the model processed, *including* cache reads and cache
  writes. codex's ``input_tokens`` already includes ``cached_input_tokens`` (OpenAI semantics), so
  nothing is added; opencode, pi and claude report uncached input separately from the cache
  counters (opencode even subtracts them), so those are added back.
* ``output_tokens`` = every generated token, *including* reasoning. codex and pi already count
  reasoning inside output; opencode subtracts it, so it is added back.
* ``cost_usd`` = the CLI's own figure when it gives a positive one, else None. A reported 0 is
  treated as unknown: opencode and pi report 0 for any model without a price table (every
  custom-provider model), so a 0 there says nothing. codex reports no cost at all; claude marks
  a guessed price with ``costBasis: "unknown"``, which is dropped too.

Each ``*_usage`` returns None when the log has no usage-bearing event at all, and a zero
``Usage`` when it has one that says zero (pi after a 401). Logs may end in a half-written line
(the CLI was killed mid-write) or hold non-JSON noise: such lines are skipped, and so is a line
nested too deep to parse (``tasks_lib.safe_json``; the agent prints what it likes to stdout).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterator

from tasks_lib.records.record_models import Usage
from tasks_lib.safe_json import loads_bounded

MAX_ERROR_LINE = 500
#: longer lines of an event log are no event a CLI writes (its usage and error events are small)
MAX_EVENT_BYTES = 16 * 2**20


def events(log: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a JSON-lines log, skipping blank, truncated and non-object lines.

    Read as a stream, one line at a time, and split on ``\n`` only: ``str.splitlines()`` also
    breaks at U+2028, U+2029 and U+0085, which Node's and Rust's JSON writers leave raw inside
    strings, so a model reply containing one would cut the line that carries the usage. A line
    longer than ``MAX_EVENT_BYTES`` is skipped unread: an agent can print anything to its stdout,
    and one 1 GB line would otherwise be held whole (bench/RESULTS.md, memory under a flood).
    """
    try:
        fh = open(log, "rb")
    except OSError:
        return
    with fh:
        while line := fh.readline(MAX_EVENT_BYTES):
            if not line.endswith(b"\n") and len(line) == MAX_EVENT_BYTES:
                while (rest := fh.readline(MAX_EVENT_BYTES)) and not rest.endswith(b"\n"):
                    pass  # the rest of an over-long line
                continue
            raw = line.decode("utf-8", errors="replace").strip()
            if not raw.startswith("{"):
                continue
            try:
                event = loads_bounded(raw)
            except ValueError:  # not JSON, or nested deeper than any event a CLI writes
                continue
            if isinstance(event, dict):
                yield event


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _num(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else 0.0


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _cost(total: float) -> float | None:
    return round(total, 8) if total > 0 else None


def _clip(text: Any) -> str | None:
    if not isinstance(text, str) or not text.strip():
        return None
    text = " ".join(text.split())
    return text if len(text) <= MAX_ERROR_LINE else text[: MAX_ERROR_LINE - 1] + "…"


# --- codex -------------------------------------------------------------------------------------

def codex_usage(log: Path) -> Usage | None:
    """Σ ``turn.completed.usage``: ``input_tokens`` (already includes cached) and ``output_tokens``."""
    found, inp, out = False, 0, 0
    for e in events(log):
        if e.get("type") == "turn.completed":
            u = _dict(e.get("usage"))
            found = True
            inp += _int(u.get("input_tokens"))
            out += _int(u.get("output_tokens"))
    return Usage(input_tokens=inp, output_tokens=out, cost_usd=None) if found else None


def codex_error(log: Path) -> str | None:
    """The last ``turn.failed.error.message``, else the last top-level ``error`` message.

    ``item.completed`` items of type ``error`` ("Model metadata … not found") are warnings that
    every custom-provider model gets, not failures, and are ignored.
    """
    failed = top = None
    for e in events(log):
        if e.get("type") == "turn.failed":
            failed = _clip(_dict(e.get("error")).get("message")) or failed
        elif e.get("type") == "error":
            top = _clip(e.get("message")) or top
    return failed or top


# --- opencode ----------------------------------------------------------------------------------

def opencode_usage(log: Path) -> Usage | None:
    """Σ over ``step_finish`` of ``part.tokens``: input + cache read/write, output + reasoning."""
    found, inp, out, cost = False, 0, 0, 0.0
    for e in events(log):
        if e.get("type") == "step_finish":
            part = _dict(e.get("part"))
            t = _dict(part.get("tokens"))
            cache = _dict(t.get("cache"))
            found = True
            inp += _int(t.get("input")) + _int(cache.get("read")) + _int(cache.get("write"))
            out += _int(t.get("output")) + _int(t.get("reasoning"))
            cost += _num(part.get("cost"))
    return Usage(input_tokens=inp, output_tokens=out, cost_usd=_cost(cost)) if found else None


def opencode_error(log: Path) -> str | None:
    """The last ``error`` event's ``error.data.message`` (else its message or name)."""
    line = None
    for e in events(log):
        if e.get("type") == "error":
            err = _dict(e.get("error"))
            data = _dict(err.get("data"))
            line = _clip(data.get("message")) or _clip(err.get("message")) or _clip(err.get("name")) or line
    return line


# --- pi ----------------------------------------------------------------------------------------

def _pi_assistant_ends(log: Path) -> Iterator[dict[str, Any]]:
    for e in events(log):
        msg = _dict(e.get("message"))
        if e.get("type") == "message_end" and msg.get("role") == "assistant":
            yield msg


def pi_usage(log: Path) -> Usage | None:
    """Σ over assistant ``message_end`` of ``message.usage``: input + cacheRead + cacheWrite, output.

    ``message_start``/``message_update`` carry zero placeholders and are not counted; after a
    401, pi (exit code 0!) logs an assistant ``message_end`` with zero usage → a zero ``Usage``.
    """
    found, inp, out, cost = False, 0, 0, 0.0
    for msg in _pi_assistant_ends(log):
        u = _dict(msg.get("usage"))
        found = True
        inp += _int(u.get("input")) + _int(u.get("cacheRead")) + _int(u.get("cacheWrite"))
        out += _int(u.get("output"))
        cost += _num(_dict(u.get("cost")).get("total"))
    return Usage(input_tokens=inp, output_tokens=out, cost_usd=_cost(cost)) if found else None


def pi_error(log: Path) -> str | None:
    """The last assistant ``errorMessage``, else a failed ``auto_retry_end``'s ``finalError``."""
    last = retry = None
    for e in events(log):
        if e.get("type") == "auto_retry_end" and e.get("success") is False:
            retry = _clip(e.get("finalError")) or retry
        msg = _dict(e.get("message"))
        if e.get("type") == "message_end" and msg.get("role") == "assistant":
            last = _clip(msg.get("errorMessage")) if msg.get("stopReason") in ("error", "aborted") else None
    return last or retry


# --- claude-code -------------------------------------------------------------------------------

def _claude_result(log: Path) -> dict[str, Any] | None:
    result = None
    for e in events(log):
        if e.get("type") == "result":
            result = e
    return result


def claude_usage(log: Path) -> Usage | None:
    """The final ``result`` line's ``usage`` (run totals; ``assistant`` events are not summed).

    input = ``input_tokens`` + ``cache_creation_input_tokens`` + ``cache_read_input_tokens``;
    cost = ``total_cost_usd`` when positive, *unless* a ``modelUsage`` entry has
    ``costBasis: "unknown"``: claude then had no price for the model id and its figure is, in its
    own words, "a guess at the default model's rate" (every custom model id gets one).
    """
    result = _claude_result(log)
    if result is None or not isinstance(result.get("usage"), dict):
        return None
    u = result["usage"]
    inp = sum(_int(u.get(k)) for k in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"))
    guessed = any(_dict(m).get("costBasis") == "unknown" for m in _dict(result.get("modelUsage")).values())
    cost = None if guessed else _cost(_num(result.get("total_cost_usd")))
    return Usage(input_tokens=inp, output_tokens=_int(u.get("output_tokens")), cost_usd=cost)


def claude_error(log: Path) -> str | None:
    """``result.result`` of a final result with ``is_error`` (``subtype`` stays "success" on error)."""
    result = _claude_result(log)
    if result is None or result.get("is_error") is not True:
        return None
    text = _clip(result.get("result"))
    if text:
        return text
    status = result.get("api_error_status")
    return f"{result.get('terminal_reason') or 'error'}" + (f" (HTTP {status})" if status else "")
