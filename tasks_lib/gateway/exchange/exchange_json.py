"""Bodies and record lines of the exchange, parsed and written so that nothing an agent sends stops
the recording or comes back changed.

Why its own module: the recorder parses what the agent and the provider sent, and writes lines
the reader parses back; both sides must agree on the same total, exact rules:

* **A body** is parsed by Python's own JSON parser, bounded in nesting depth (``safe_json``): it
  keeps every integer exactly (``orjson`` turns one past 64 bits into a float, silently), tells
  ``1`` from ``1.0`` and ``-0.0`` from ``0.0``, and reads a lone surrogate escape (``"\\ud800"``)
  as the string it is. What does not parse (not UTF-8, not JSON, nested too deep, an integer of
  thousands of digits) is kept as its exact bytes (``raw_text``) with the reason.
* **A line** is written by ``json.dumps``, UTF-8 where it can be and ``\\u`` escapes only in a line
  holding a lone surrogate (which UTF-8 cannot carry: Pydantic's own writer raised on it, and that
  once ended a trial's recording for good). NaN/Infinity, which Python's parser accepts in a body,
  are written and read back as such. The reader parses lines with the same parser.
"""

from __future__ import annotations

import json
from typing import Any

from tasks_lib.gateway.exchange.exchange_model import ExchangeEntry
from tasks_lib.safe_json import MAX_DEPTH, loads_bounded

#: as Pydantic's own writer: no spaces
_COMPACT = (",", ":")
#: a record line wraps a body in a few levels of its own
_LINE_DEPTH = MAX_DEPTH + 8


def parse_body(body: bytes) -> tuple[Any, str | None, str | None]:
    """(the parsed body, its raw text, why it did not parse): the first when it parses, else the
    other two. Never raises. An empty body is (None, None, None); a body ``null`` is kept as text."""
    if not body:
        return None, None, None
    try:
        value = loads_bounded(body.decode("utf-8"))
        if value is not None:
            return value, None, None
        why = "the JSON value null"
    except UnicodeDecodeError as exc:
        why = f"not UTF-8 at byte {exc.start}"
    except ValueError as exc:  # malformed, too deep, or a 5000-digit integer
        why = str(exc)[:300]
    return None, raw_text(body), why


def raw_text(body: bytes) -> str:
    """``body`` as text that gives back its exact bytes (``raw_bytes``): undecodable bytes become
    lone surrogates (``surrogateescape``), which no UTF-8 text can hold, so nothing is ambiguous;
    the text still passes through the recording's redaction like any other."""
    return body.decode("utf-8", "surrogateescape")


def raw_bytes(text: str) -> bytes:
    """The exact bytes of a body kept by ``raw_text``."""
    return text.encode("utf-8", "surrogateescape")


def entry_line(entry: ExchangeEntry) -> str:
    """One JSON line for ``entry`` (without its newline), bodies exactly as parsed."""
    obj = entry.model_dump(mode="json", exclude_defaults=True, exclude={"request", "reply"})
    for name in ("request", "reply"):
        value = getattr(entry, name)
        if value is not None:
            obj[name] = value
    text = json.dumps(obj, ensure_ascii=False, check_circular=False, separators=_COMPACT)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escaped, so the line is UTF-8 and reads back the same
        text = json.dumps(obj, ensure_ascii=True, check_circular=False, separators=_COMPACT)
    return text


def parse_line(line: str) -> ExchangeEntry:
    """The entry of one record line; ``ValueError`` (Pydantic's included) when it is not one."""
    obj = loads_bounded(line, max_depth=_LINE_DEPTH)
    if not isinstance(obj, dict):
        raise ValueError("a record line is a JSON object")
    bodies = {name: obj.pop(name, None) for name in ("request", "reply")}
    entry = ExchangeEntry.model_validate(obj)
    entry.request, entry.reply = bodies["request"], bodies["reply"]
    return entry
