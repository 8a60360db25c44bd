"""Usage and the error line of a declared harness: one of tbflow's parsers, or a field mapping.

A field mapping reads the JSON lines of the harness's events log with the same reader as the
built-in parsers (``usage_parsers.events``: truncated lines, noise and over-long lines skipped),
so a file-declared CLI is judged by the same rules as a built-in one: ``None`` when no line
carries usage, a zero ``Usage`` when one says zero (a 401), never a made-up count. A cost of 0
is unknown, as for the built-ins (``usage_parsers`` module docstring).

The error pattern is searched line by line in the events log, then stdout, then stderr (each
read up to ``MAX_SCAN_BYTES``); the last match wins, its first group when it has one.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from harnesses.cli import usage_parsers
from harnesses.declared.spec import PARSERS, UsageTable
from tasks_lib.records.record_models import Usage

MAX_SCAN_BYTES = 8 * 2**20


def _get(event: Any, path: str) -> Any:
    for part in path.split("."):
        if not isinstance(event, dict) or part not in event:
            return None
        event = event[part]
    return event


def _matches(event: dict[str, Any], match: dict[str, str | int | bool]) -> bool:
    return all(_get(event, k) == v for k, v in match.items())


def mapped_usage(spec: UsageTable, log: Path) -> Usage | None:
    """Usage of the lines ``spec.match`` selects that carry at least one of its fields."""
    if spec.parser is not None:
        return PARSERS[spec.parser][0](log)
    found, inp, out, cost = False, 0, 0, 0.0
    for event in usage_parsers.events(log):
        if not _matches(event, spec.match):
            continue
        values = [_get(event, p) for p in [*(spec.input or []), *(spec.output or [])]]
        if all(v is None for v in values):
            continue
        i = sum(usage_parsers._int(_get(event, p)) for p in spec.input or [])
        o = sum(usage_parsers._int(_get(event, p)) for p in spec.output or [])
        c = usage_parsers._num(_get(event, spec.cost)) if spec.cost else 0.0
        if spec.combine == "last":
            inp, out, cost = i, o, c
        else:
            inp, out, cost = inp + i, out + o, cost + c
        found = True
    return Usage(input_tokens=inp, output_tokens=out, cost_usd=usage_parsers._cost(cost)) if found else None


def mapped_error(spec: UsageTable | None, log: Path) -> str | None:
    """The parser's error line, or the text at ``spec.error`` in the last selected line that has it."""
    if spec is None:
        return None
    if spec.parser is not None:
        return PARSERS[spec.parser][1](log)
    if spec.error is None:
        return None
    line = None
    for event in usage_parsers.events(log):
        if _matches(event, spec.match):
            line = usage_parsers._clip(_get(event, spec.error)) or line
    return line


def pattern_error(pattern: str, logs: list[Path]) -> str | None:
    """The last match of ``pattern`` in ``logs`` (later logs win), its group 1 when it has one."""
    regex = re.compile(pattern)
    last = None
    for log in logs:
        try:
            with log.open("rb") as fh:
                text = fh.read(MAX_SCAN_BYTES).decode("utf-8", "replace")
        except OSError:
            continue
        for line in text.split("\n"):
            found = regex.search(line)
            if found:
                last = found.group(1) if regex.groups and found.group(1) else found.group(0)
    return usage_parsers._clip(last)
