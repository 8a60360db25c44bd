"""``--fail-on-flagged``: a CI gate on trials where the agent reached for the judge.

Flags never change a verdict (docs/judge.md): a trial the agent broke is scored 0, tampering
and a changed toolchain are shown next to the reward. A benchmark run in CI should still be able
to refuse a job in which an agent tried: bare ``--fail-on-flagged`` fails on any flag of the kinds
in ``DEFAULT_KINDS``; ``--fail-on-flagged=KIND[,KIND...]`` picks the kinds (``all`` = every kind,
including ``agent-processes``, which a task that asks for a running service always shows).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import get_args

from tasks_lib.errors import InputError
from tasks_lib.records.record_models import TrialFlag, TrialRecord

FLAG = "--fail-on-flagged"
ALL_KINDS: tuple[str, ...] = get_args(TrialFlag.model_fields["kind"].annotation)
DEFAULT_KINDS = ("tampering", "broke-container", "toolchain-changed")


@dataclass(frozen=True)
class FlagGate:
    kinds: tuple[str, ...]
    tripped: bool = False
    message: str = ""


def parse_kinds(text: str) -> tuple[str, ...]:
    raw = text.strip().lower()
    if raw in ("", "any"):
        return DEFAULT_KINDS
    if raw == "all":
        return ALL_KINDS
    kinds = tuple(k.strip() for k in raw.split(",") if k.strip())
    unknown = [k for k in kinds if k not in ALL_KINDS]
    if unknown or not kinds:
        raise InputError(FLAG, f"{text!r}: not a flag kind; use the bare flag, 'all', or some of {', '.join(ALL_KINDS)}")
    return kinds


def looks_like_kinds(text: str) -> bool:
    return text.strip().lower() in ("any", "all") or all(k.strip() in ALL_KINDS for k in text.split(","))


def check_flags(kinds: tuple[str, ...], records: list[TrialRecord]) -> FlagGate:
    hit = [(r.trial_id, f.kind) for r in records for f in r.flags if f.kind in kinds]
    trials = sorted({t for t, _ in hit})
    if not trials:
        return FlagGate(kinds, False, f"no trial flagged {'/'.join(kinds)}")
    counts = ", ".join(f"{k}: {n}" for k, n in sorted(Counter(k for _, k in hit).items()))
    shown = ", ".join(trials[:10]) + (f" and {len(trials) - 10} more" if len(trials) > 10 else "")
    return FlagGate(kinds, True, f"{len(trials)} flagged trial{'s' if len(trials) != 1 else ''} ({counts}): {shown}")
