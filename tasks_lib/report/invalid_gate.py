"""``--fail-on-invalid``: a CI gate on how many trials could not be judged.

A job whose trials are mostly invalid measured the environment, not the agent, so its score
should not pass CI silently. Threshold forms (the same ones Inspect's ``fail_on_error`` offers,
but spelled so a count and a fraction cannot be confused):

* bare ``--fail-on-invalid`` (or ``=any``): any invalid trial fails;
* ``--fail-on-invalid=N``: fails when **more than N** trials are invalid;
* ``--fail-on-invalid=P%``: fails when **more than P percent** of the recorded trials are invalid.

Trials that ended in a tbflow error (validity ``error``: a bug of ours, not the agent's or the
environment's) were not judged either, so they count against the gate like invalid ones and
the message names them apart. The denominator is the recorded trials (scored + invalid +
error). A job with no recorded trial at all also fails the gate: an empty run must not look like
a clean one in CI.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

from tasks_lib.errors import InputError

FLAG = "--fail-on-invalid"
_NUMBER = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(%?)\s*$")


@dataclass(frozen=True)
class Threshold:
    """``kind='count'`` with ``value`` N (0 = any invalid), or ``kind='percent'`` with P."""

    kind: Literal["count", "percent"]
    value: float
    spelled: str

    @property
    def flag(self) -> str:
        return FLAG if self.spelled == "any" else f"{FLAG}={self.spelled}"


@dataclass(frozen=True)
class GateResult:
    tripped: bool
    message: str


def looks_like_threshold(text: str) -> bool:
    """Whether a bare token after the flag is meant as its value (``5``, ``10%``, ``any``)."""
    return text.strip().lower() == "any" or bool(_NUMBER.match(text))


def parse_threshold(text: str) -> Threshold:
    """Parse a ``--fail-on-invalid`` value; ``InputError`` naming the flag when it is not one."""
    raw = text.strip()
    if raw.lower() in ("any", ""):
        return Threshold("count", 0, "any")
    m = _NUMBER.match(raw)
    if not m:
        raise InputError(FLAG, f"{text!r} is not a threshold; use the bare flag (any invalid trial fails), "
                               "a count like =5, or a percentage like =10%")
    number, percent = float(m.group(1)), m.group(2) == "%"
    if percent:
        if number > 100:
            raise InputError(FLAG, f"{text!r}: a percentage must be between 0% and 100%")
        return Threshold("percent", number, f"{m.group(1)}%")
    if not number.is_integer():
        raise InputError(FLAG, f"{text!r}: a count must be a whole number (for a fraction write e.g. =10%)")
    return Threshold("count", int(number), m.group(1))


def check(threshold: Threshold, invalid: int, total: int, errors: int = 0, unrecorded: int = 0,
          flag: str = FLAG) -> GateResult:
    """Apply the gate to ``invalid`` + ``errors`` unjudged trials of ``total`` recorded ones, and
    to ``unrecorded`` planned trials that ended without a record (a job run that finished with
    some is not a clean one either; they count in the denominator too). ``flag`` is how the gate
    is named in the message (a deployment's user set the parameter ``fail_on_invalid``)."""
    if total == 0:
        return GateResult(True, f"no trial was recorded, so nothing was judged "
                                f"({threshold.flag.replace(FLAG, flag)} fails an empty job)")
    counted = f"{invalid} invalid trial{'s' if invalid != 1 else ''}"
    if errors:
        counted += f" + {errors} tbflow error{'s' if errors != 1 else ''}"
    if unrecorded:
        counted += f" + {unrecorded} without a record"
    invalid += errors + unrecorded
    total += unrecorded
    share = 100.0 * invalid / total
    counted += f" of {total} ({share:.1f}%)"
    if threshold.kind == "count":
        tripped = invalid > threshold.value
    else:
        tripped = invalid * 100 > threshold.value * total  # exact, no float rounding at the edge
    one = invalid == 1
    verdict = ("exceeds" if one else "exceed") if tripped else ("is within" if one else "are within")
    if threshold.spelled == "any":
        return GateResult(tripped, f"{counted} {verdict} {flag} (any invalid trial fails)")
    return GateResult(tripped, f"{counted} {verdict} {threshold.flag.replace(FLAG, flag)}")
