"""Storing a request as what is new in it: the bound on a long agent's recording.

Why: every request of a chat agent repeats the whole conversation (and its tool definitions), so
storing each request whole grows with the *square* of the turns. Here a request is stored
relative to one of the trial's recent requests (its *base*): the history list keeps only the
items after the longest prefix it shares with the base, and every other top-level key equal to
the base's is named instead of stored. What is stored per request is then what the agent added
since its base (the previous tool results and its new message) plus any key that changed, so a
trial's recording grows with the conversation's length, not with its square
(bench/RESULTS.md, "Recording the model exchange").

The base is chosen among the last ``WINDOW`` requests (a side call, e.g. a title request, must
not break the chain of the main conversation). Pure functions; ``restore`` inverts ``delta``
exactly: values are left out only when they are the *same* JSON (``same``: Python's ``==`` holds
``1 == 1.0 == True`` and ``0.0 == -0.0``, and ignores key order, so ``"stream": 1`` once came
back as ``true``), and the request's key order is kept.
"""

from __future__ import annotations

import json
from typing import Any

from tasks_lib.gateway.exchange.exchange_model import HistoryRef

#: how many recent full requests a trial's recorder (and its reader) keep to choose a base from
WINDOW = 4


def same(a: Any, b: Any) -> bool:
    """Whether two parsed JSON values are the same document: types (bool, int, float), the sign
    of zero and key order included. ``==`` first (in C, and false for nearly every pair that
    differs); the encodings then tell ``1`` from ``1.0`` and ``True``. A NaN is never the same
    as anything, so it is stored, not referenced: exact either way."""
    if a is b:
        return True
    return bool(a == b) and _text(a) == _text(b)


def _text(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, check_circular=False)


def common_prefix(a: list, b: list) -> int:
    """How many leading items ``a`` and ``b`` share by ``==`` (the trajectory's parsed items)."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if x != y:
            break
        n += 1
    return n


def same_prefix(a: list, b: list) -> int:
    """How many leading items of two JSON lists are the ``same``."""
    n = 0
    for x, y in zip(a, b, strict=False):
        if not same(x, y):
            break
        n += 1
    return n


def delta(request: Any, field: str | None, recent: dict[int, Any]) -> tuple[Any, HistoryRef | None, list[str]]:
    """(what to store, its history reference, the keys left out as unchanged) for ``request``.

    ``recent`` maps a sequence number to that request's full body (the window). A body that is
    not a JSON object, or has no list under ``field``, is stored whole.
    """
    if not isinstance(request, dict) or not recent:
        return request, None, []
    history = request.get(field) if field else None
    best, keep = max(recent), 0
    if isinstance(history, list):  # the base by ``==`` (in C); then its prefix checked to be the same JSON
        for seq, body in recent.items():
            theirs = body.get(field) if isinstance(body, dict) else None
            shared = common_prefix(history, theirs) if isinstance(theirs, list) else 0
            if shared > keep or (shared == keep and seq > best and shared):
                best, keep = seq, shared
        if keep:
            keep = same_prefix(history[:keep], recent[best][field][:keep])
    base = recent[best]
    if not isinstance(base, dict):
        return request, None, []
    unchanged = sorted(k for k, v in request.items() if k != field and k in base and same(base[k], v))
    stored = {k: v for k, v in request.items() if k not in unchanged}
    if not (isinstance(history, list) and keep) and not unchanged:
        return stored, None, []
    ref = HistoryRef(base=best)
    if isinstance(history, list) and keep:
        ref.field, ref.keep = field, keep
        stored[field] = history[keep:]
    if list(request) != _natural_order(base, stored, unchanged):
        ref.order = list(request)
    return stored, ref, unchanged


def _natural_order(base: dict, stored: dict, unchanged: list[str]) -> list[str]:
    """The key order ``restore`` gives without ``order``: the base's, then the keys the base lacks.
    A client sends its keys in the same order every time, so ``order`` is rarely stored."""
    kept = set(unchanged) | set(stored)
    return [k for k in base if k in kept] + [k for k in stored if k not in base]


def restore(stored: Any, ref: HistoryRef | None, unchanged: list[str], recent: dict[int, Any]) -> Any:
    """The full request from what ``delta`` stored; ``KeyError`` when its base is not in ``recent``."""
    if not isinstance(stored, dict) or ref is None:
        return stored
    base = recent[ref.base]
    full = {k: stored[k] if k in stored else base[k] for k in ref.order or _natural_order(base, stored, unchanged)}
    if ref.field is not None:
        full[ref.field] = list(base[ref.field][:ref.keep]) + list(stored.get(ref.field) or [])
    return full
