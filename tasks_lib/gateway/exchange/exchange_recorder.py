"""Writes each trial's model exchange to its host directory as the gateway books each request.

Why here: every model call of every harness passes through the gateway, so a transcript taken
here needs no per-CLI log format and the agent can neither hide nor forge it. The gateway calls
``record`` once per booked request (``ModelGateway._book``); nothing else in the forwarding path
knows about recording.

What is written (``exchange_model.ExchangeEntry``, one JSON line per request, to the file given
at ``start``, which the caller puts under the trial's host directory): method, route, API,
status, start time, duration, the gateway's token count, the request body as a delta
(``history_delta``) and the reply (a stream reassembled, ``sse_reassembly``). Never headers (they
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

from tasks_lib.gateway.exchange.exchange_model import HISTORY_FIELD, ExchangeEntry, api_of
from tasks_lib.gateway.exchange.history_delta import WINDOW, delta
from tasks_lib.gateway.exchange.sse_reassembly import reassemble, sse_events
from tasks_lib.safe_json import loads_bounded

_log = logging.getLogger(__name__)
#: a trial's recording takes bodies up to this many bytes; then only status, timing and tokens
MAX_TRIAL_BYTES = 256 * 1024 * 1024
#: a body that is not JSON is kept as text up to this many characters
MAX_TEXT_CHARS = 64 * 1024


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

        Never raises: it runs in the forwarding path, and a recording that cannot be written (a
        full disk, a bug on an odd body) must not cut the agent's reply. The trial's recording
        stops there, and the log says why.
        """
        elapsed = time.monotonic() - t0
        with self._lock:
            trial = self._trials.get(trial_id)
            if trial is None:
                return
            try:
                trial.seq += 1
                entry = _entry(trial, trial.seq, method, path, out, elapsed)
                line = self._scrub(entry.model_dump_json(exclude_defaults=True)) + "\n"
                trial.written += len(line)
                with trial.path.open("a", encoding="utf-8") as fh:
                    fh.write(line)
            except Exception as exc:  # noqa: BLE001 (see the docstring)
                del self._trials[trial_id]
                _log.warning("trial %s: its model exchange is no longer recorded: %s: %s", trial_id,
                             type(exc).__name__, self._scrub(str(exc))[:300])


def _entry(trial: _Trial, seq: int, method: str, path: str, out: Booked, elapsed: float) -> ExchangeEntry:
    api = api_of(path)
    started = datetime.now(timezone.utc) - timedelta(seconds=elapsed)
    entry = ExchangeEntry(seq=seq, started=started, ms=round(elapsed * 1000, 1), method=method, path=path, api=api,
                          status=out.status, error=out.error, stream=out.sse,
                          input_tokens=out.tokens.input_tokens if out.tokens else None,
                          output_tokens=out.tokens.output_tokens if out.tokens else None)
    if trial.written >= MAX_TRIAL_BYTES:
        entry.truncated = True
        return entry
    request, entry.request_text = _json_or_text(out.request)
    if request is not None:
        entry.request, entry.history, entry.unchanged = delta(request, HISTORY_FIELD.get(api), trial.recent)
        trial.recent[seq] = request
        for old in sorted(trial.recent)[:-WINDOW]:
            del trial.recent[old]
    if out.sse:
        entry.reply = reassemble(api, sse_events(out.reply))
        entry.reply_text = None if entry.reply is not None else out.reply[:MAX_TEXT_CHARS].decode("utf-8", "replace")
    else:
        entry.reply, entry.reply_text = _json_or_text(out.reply)
    return entry


def _json_or_text(body: bytes) -> tuple[Any, str | None]:
    """The parsed body (bounded in depth: the request is the agent's), else its start as text."""
    if not body:
        return None, None
    try:
        return loads_bounded(body.decode("utf-8")), None
    except (ValueError, UnicodeDecodeError):
        return None, body[:MAX_TEXT_CHARS].decode("utf-8", "replace")

