"""Reading a trial's recorded exchange back with every request whole again.

Why a module: the trajectory converters want each request as the API saw it; the recording keeps
deltas (``history_delta``). The reader keeps the same window of recent full requests as the
recorder did, so memory stays bounded by a few requests, not the whole trial.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterator

from tasks_lib.gateway.exchange.exchange_json import parse_line
from tasks_lib.gateway.exchange.exchange_model import ExchangeEntry
from tasks_lib.gateway.exchange.history_delta import WINDOW, restore


def read_exchange(path: Path) -> Iterator[ExchangeEntry]:
    """The entries of ``path`` in order, ``request`` restored to the whole body.

    A line that does not parse (a gateway killed mid-write) ends the reading: what came before
    stands. An entry whose base fell out of the window keeps its delta and no ``history``.
    """
    recent: dict[int, object] = {}
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            try:
                entry = parse_line(line)
            except ValueError:  # Pydantic's ValidationError is one
                return
            if entry.request is not None:
                try:
                    entry.request = restore(entry.request, entry.history, entry.unchanged, recent)
                    entry.history, entry.unchanged = None, []
                except KeyError:
                    yield entry
                    continue
                recent[entry.seq] = entry.request
                for old in sorted(recent)[:-WINDOW]:
                    del recent[old]
            yield entry
