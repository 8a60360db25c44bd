"""tbflow-agent's event log: one JSON object a line in ``logs_dir/events.jsonl``, flushed at once.

Written as things happen (a model reply with its usage the moment it arrives, a tool result as it
ends), so whatever cuts the loop off — the deadline, a stuck call, tbflow abandoning it — the log
already holds every reply the model gave; ``usage_of`` then counts them for "reached the model".
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from tasks_lib.records.record_models import Usage
from tasks_lib.safe_json import loads_bounded

EVENT_LOG = "events.jsonl"


class EventLog:
    """Appends events to ``path``; every write is flushed before ``write`` returns."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = path.open("a", encoding="utf-8")

    def write(self, kind: str, **fields: Any) -> None:
        line = json.dumps({"type": kind, "time": round(time.time(), 3), **fields}, ensure_ascii=False)
        self._fh.write(line + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()


def read_events(logs_dir: Path) -> list[dict]:
    """The events of ``logs_dir``; a line that is not a JSON object (cut mid-write) is skipped, and
    so is one nested too deep to parse (``tasks_lib.safe_json``: never a ``RecursionError``)."""
    path = logs_dir / EVENT_LOG
    if not path.is_file():
        return []
    out = []
    for line in path.read_text(encoding="utf-8", errors="replace").split("\n"):
        try:
            event = loads_bounded(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            out.append(event)
    return out


def usage_of(logs_dir: Path) -> Usage | None:
    """The tokens of every model reply in the log; None when the model never answered."""
    replies = [e.get("usage") or {} for e in read_events(logs_dir) if e.get("type") == "model"]
    if not replies:
        return None
    return Usage(input_tokens=sum(int(u.get("input_tokens") or 0) for u in replies),
                 output_tokens=sum(int(u.get("output_tokens") or 0) for u in replies))


def error_of(logs_dir: Path) -> str | None:
    """The last error the agent logged (e.g. the model's 401), for an invalid trial's reason."""
    errors = [e for e in read_events(logs_dir) if e.get("type") == "error"]
    return str(errors[-1].get("message")) if errors else None
