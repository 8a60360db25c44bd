"""``json.loads`` for documents tbflow did not write (a verifier's reward.json, an agent CLI's event
log), bounded in length and nesting depth.

``json.loads`` recurses once per nested array or object, so ``[`` * 5000 + ``]`` * 5000 (10 KB)
raises ``RecursionError``, which is no ``ValueError``: callers that skip or report malformed input
let it through, and a trial whose verifier wrote such a reward.json ended as a tbflow bug (status
error) and was re-run by every resume. Here the depth is measured before parsing, by one scan over
the brackets outside strings, so an over-deep document is refused the same cheap way at any depth;
every refusal is a ``ValueError`` with a readable reason. Anything within the bounds parses exactly
as ``json.loads`` parses it.
"""

from __future__ import annotations

import itertools
import json
import operator
import re
from typing import Any

#: deeper than any document tbflow reads needs, and far below the interpreter's recursion limit
#: (1000 frames, shared with whatever called the parser)
MAX_DEPTH = 200

#: a JSON string (escapes included), or an unterminated one to the end: brackets in it do not nest
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"?', re.DOTALL)
_NOT_BRACKET = re.compile(r"[^\[\]{}]+")
#: an opening bracket steps 2, a closing one 0; minus 1 per bracket, the running sum is the depth
_STEPS = str.maketrans({"[": "\x02", "{": "\x02", "]": "\x00", "}": "\x00"})


class JsonRefused(ValueError):
    """The document is larger or nested deeper than the caller's bounds; it was not parsed."""


def nesting_depth(text: str) -> int:
    """The deepest nesting of arrays and objects in ``text`` (0 for a scalar), counting only
    brackets outside strings; for malformed text, at least the depth ``json.loads`` would reach
    before it gave up. Linear, and iterated in C: a 16 MB line of brackets takes about a second."""
    brackets = _NOT_BRACKET.sub("", _STRING.sub("", text))
    steps = brackets.translate(_STEPS).encode("latin-1")
    return max(itertools.chain((0,), map(operator.sub, itertools.accumulate(steps), itertools.count(1))))


def loads_bounded(text: str, *, max_chars: int | None = None, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads(text)``, refused with ``JsonRefused`` when ``text`` is longer than ``max_chars``
    or nests deeper than ``max_depth``. Raises only ``ValueError``s (``json.JSONDecodeError`` for
    malformed JSON, as ``json.loads`` does; also its ``ValueError`` for a 5000-digit integer)."""
    if max_chars is not None and len(text) > max_chars:
        raise JsonRefused(f"longer than {max_chars} characters ({len(text)})")
    depth = nesting_depth(text)
    if depth > max_depth:
        raise JsonRefused(f"nested {depth} levels deep (at most {max_depth} are read)")
    try:
        return json.loads(text)
    except RecursionError:  # only when the caller's own stack is already near the limit
        raise JsonRefused(f"nested too deep to read here ({depth} levels)") from None
