"""Writes each trial's model exchange to its host directory as the gateway books each request.

Why here: every model call of every harness passes through the gateway, so a transcript taken
here needs no per-CLI log format and the agent can neither hide nor forge it. The gateway calls
``record`` once per booked request (``ModelGateway._book``); nothing else in the forwarding path
knows about recording.

What is written (``exchange_model.ExchangeEntry``, one JSON line per request, to the file given
at ``start``, which the caller puts under the trial's host directory): method, route, API,
status, start time, duration, the gateway's token count, the request body as a delta
(``history_delta``) and the reply (a stream reassembled, ``sse_reassembly``); a body that does
not parse as its exact bytes, with the reason (``exchange_json``). Never headers (they
carry keys and tokens); each line passes through the gateway's redaction (the real keys and
every per-trial token) before it is written.

Bound: a trial's file stops taking bodies at ``MAX_TRIAL_BYTES`` (entries still record status,
timing and tokens, marked ``truncated``); below it, what is stored grows with what the agent and
the model added, not with the square of the turns (bench/RESULTS.md).
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any, Callable, Protocol

from tasks_lib.gateway.exchange.exchange_json import entry_line, parse_body, raw_text
from tasks_lib.gateway.exchange.exchange_model import HISTORY_FIELD, ExchangeEntry, api_of
from tasks_lib.gateway.exchange.history_delta import WINDOW, delta
from tasks_lib.gateway.exchange.sse_reassembly import reassemble, sse_events

_log = logging.getLogger(__name__)
#: a trial's recording takes bodies up to this many bytes; then only status, timing and tokens
MAX_TRIAL_BYTES = 256 * 1024 * 1024


class Booked(Protocol):
    """What the gateway knows of one request when it books it (``gateway_http.Outcome``)."""

    status: int
    tokens: Any
    error: str | None
    request: bytes
    reply: bytes
    sse: bool


@dataclass
class _Trial:
    path: Path
    seq: int = 0
    written: int = 0
    recent: dict[int, Any] = field(default_factory=dict)


class ExchangeRecorder:
    """Per-trial recordings, thread-safe; ``scrub`` removes secrets from each line before it is written."""

    def __init__(self, scrub: Callable[[str], str]) -> None:
        self._scrub = scrub
        self._lock = threading.Lock()
        self._trials: dict[str, _Trial] = {}

    def start(self, trial_id: str, path: Path) -> None:
        """Record ``trial_id``'s requests to ``path`` from now on (a file left by an earlier try is replaced)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
        with self._lock:
            self._trials[trial_id] = _Trial(path)

    def stop(self, trial_id: str) -> None:
        with self._lock:
            self._trials.pop(trial_id, None)


    def record(self, trial_id: str, method: str, path: str, out: Booked, t0: float) -> None:
        """Append one booked request to the trial's recording (nothing when it is not recorded).

        Never raises and never stops: it runs in the forwarding path, and the agent must not be
        able to end its own record. A body that does not parse is kept as bytes
        (``exchange_json``); should building the entry still fail (a bug met on an odd body), the
        request is written without its bodies, marked ``unrecorded`` with the reason; a line that
        cannot be written (a full disk) is logged, and the next request is tried again.
        """
        elapsed = time.monotonic() - t0
        with self._lock:
            trial = self._trials.get(trial_id)
            if trial is None:
                return
            trial.seq += 1
            try:
                entry, full = _entry(trial, trial.seq, method, path, out, elapsed)
                line = self._scrub(entry_line(entry))
            except Exception as exc:  # noqa: BLE001 (see the docstring)
                entry, full = _bare_entry(trial.seq, method, path, out, elapsed), None
                entry.unrecorded = self._scrub(f"{type(exc).__name__}: {exc}")[:300]
                line = self._scrub(entry_line(entry))
            try:
                with trial.path.open("a", encoding="utf-8") as fh:
                    fh.write(line + "\n")
            except OSError as exc:
                _log.warning("trial %s: request %d of its model exchange was not recorded: %s", trial_id,
                             trial.seq, self._scrub(str(exc))[:300])
                return
            trial.written += len(line) + 1
            if full is not None:  # a base only once the reader can see it too
                trial.recent[trial.seq] = full
                for old in sorted(trial.recent)[:-WINDOW]:
                    del trial.recent[old]


def _bare_entry(seq: int, method: str, path: str, out: Booked, elapsed: float) -> ExchangeEntry:
    """The entry without its bodies: status, timing and the gateway's token count."""
    started = datetime.now(timezone.utc) - timedelta(seconds=elapsed)
    return ExchangeEntry(seq=seq, started=started, ms=round(elapsed * 1000, 1), method=method, path=path,
                         api=api_of(path), status=out.status, error=out.error, stream=out.sse,
                         input_tokens=out.tokens.input_tokens if out.tokens else None,
                         output_tokens=out.tokens.output_tokens if out.tokens else None)


def _entry(trial: _Trial, seq: int, method: str, path: str, out: Booked,
           elapsed: float) -> tuple[ExchangeEntry, Any]:
    """The entry, and the full parsed request to keep as a later request's base (None if none)."""
    entry = _bare_entry(seq, method, path, out, elapsed)
    if trial.written >= MAX_TRIAL_BYTES:
        entry.truncated = True
        return entry, None
    request, entry.request_text, entry.request_unparsed = parse_body(out.request)
    if request is not None:
        entry.request, entry.history, entry.unchanged = delta(request, HISTORY_FIELD.get(entry.api), trial.recent)
    if out.sse:
        entry.reply = reassemble(entry.api, sse_events(out.reply))
        if entry.reply is None and out.reply:
            entry.reply_text, entry.reply_unparsed = raw_text(out.reply), "a stream of an API not reassembled"
    else:
        entry.reply, entry.reply_text, entry.reply_unparsed = parse_body(out.reply)
    return entry, request
