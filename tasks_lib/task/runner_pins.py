"""What a task's ``tests/test.sh`` pins for its test runner, read from the script text alone.

Why: tbflow supplies the verifier's runner itself (uv, the Python it asks for, pytest and every
``-w`` wheel at the pinned versions, prepared on the host and mounted read-only) instead of letting
test.sh download them into a container the agent controlled (DESIGN.md §3, "Prevent, don't
detect"). That is only honest when tbflow knows *exactly* what test.sh would have run. So this
reader is strict: it accepts the standard TB 2.x prologue and its known harmless variations, and
answers ``NotPinned`` (naming the line) for anything it does not fully account for: a pipe other
than the uv installer, ``$(...)``, a redirection other than the reward writes, ``pip install``,
the image's own ``pytest``, an unpinned pytest, ``set -e``. A false "pinned" would run the tests
differently from what the task says; a false "not pinned" only costs the container fallback.

Pure: stdlib and pydantic only, input bounded (``MAX_BYTES``, ``MAX_LINES``), linear time.
"""

from __future__ import annotations

import re

from tasks_lib.task.runner_pins_model import Draft, NotPinned, RewardRule, RunnerPins, WheelPin
from tasks_lib.task.runner_pins_steps import STEPS, Step, StepError
from tasks_lib.task.shell_lines import LogicalLine, Refused, logical_lines

__all__ = ["MAX_BYTES", "MAX_LINES", "NotPinned", "RewardRule", "RunnerPins", "WheelPin", "read_runner_pins"]

MAX_BYTES = 64 * 1024  # the largest TB 2.1 test.sh is under 2 KiB
MAX_LINES = 400
# No shebang is fine: Harbor runs test.sh as a command from ``bash -c`` (a file without ``#!`` then
# runs in bash) and tbflow's judge runs ``bash /tests/test.sh``; another interpreter is refused.
_SHEBANGS = ("#!/bin/bash", "#!/usr/bin/env bash")


def read_runner_pins(test_sh: str) -> RunnerPins | NotPinned:
    """Read test.sh; ``RunnerPins`` only when every line is accounted for, else ``NotPinned``."""
    # chars <= bytes, so a huge string is refused before it is encoded
    size = len(test_sh) if len(test_sh) > MAX_BYTES else len(test_sh.encode("utf-8", "surrogatepass"))
    if size > MAX_BYTES:
        return NotPinned(reason=f"test.sh is over the {MAX_BYTES} bytes this reader takes")
    if test_sh.count("\n") + 1 > MAX_LINES:
        return NotPinned(reason=f"test.sh has over {MAX_LINES} lines")
    if bad := re.search(r"[\x00-\x08\x0b-\x1f\x7f\r]", test_sh):
        line = test_sh.count("\n", 0, bad.start()) + 1
        return NotPinned(reason=f"a control character {bad.group(0)!r} (CRLF or binary)", line=line)
    first = test_sh.split("\n", 1)[0].rstrip(" \t")
    if first.startswith("#!") and first not in _SHEBANGS:
        return NotPinned(reason="a shebang other than bash's", line=1, text=first[:200])
    try:
        draft = _walk(logical_lines(test_sh))
    except _Stop as stop:
        return stop.not_pinned
    except Refused as refused:
        return NotPinned(reason=str(refused))
    return _finish(draft)


class _Stop(Exception):
    def __init__(self, not_pinned: NotPinned) -> None:
        super().__init__(str(not_pinned))
        self.not_pinned = not_pinned


def _walk(lines: list[LogicalLine]) -> Draft:
    """Feed each statement to the first step that claims it; a block step may take several lines."""
    draft = Draft()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.text.startswith("#") or line.text == "set -x":
            i += 1
            continue
        if draft.reward is not None:
            raise _Stop(_refuse(line, "a command after the reward is written"))
        i += _apply(draft, lines, i)
    return draft


def _apply(draft: Draft, lines: list[LogicalLine], i: int) -> int:
    line = lines[i]
    draft.prev_was_test, draft.last_was_test = draft.last_was_test, False
    step: Step
    for step in STEPS:
        try:
            taken = step(draft, lines, i)
        except StepError as error:
            raise _Stop(_refuse(lines[min(i + error.offset, len(lines) - 1)], error.reason)) from None
        except Refused as refused:
            raise _Stop(_refuse(line, f"{refused} is not something this reader takes literally")) from None
        if taken:
            return taken
    raise _Stop(_refuse(line, "a command this reader does not know"))


def _refuse(line: LogicalLine, reason: str) -> NotPinned:
    return NotPinned(reason=reason, line=line.number, text=line.text[:200])


def _finish(d: Draft) -> RunnerPins | NotPinned:
    if d.pytest_args is None:
        return NotPinned(reason="no 'uvx ... pytest' test command")
    if d.reward is None:
        return NotPinned(reason="no reward block after the test command")
    if d.python is None or d.uv is None:  # the uvx step already refuses these; keeps mypy honest
        return NotPinned(reason="the Python or uv version is not pinned")
    return RunnerPins(python=d.python, uv=d.uv, wheels=tuple(d.wheels), pytest_args=d.pytest_args,
                      apt_packages=tuple(d.apt), setup_commands=tuple(d.setup), cwd=d.cwd,
                      checks_workdir=d.checks_workdir, reward=d.reward)
