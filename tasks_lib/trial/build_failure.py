"""The reason a failed image build gives: its cause first, the log's last lines after it.

Every place a user looks first (the CLI's line, the report's invalid table, the trials artifact,
the flow log) shows the head of an invalid trial's reason, so the head must be the cause: the
build step that failed and the engine's error line, e.g.

    docker build failed at Step 2/2 (RUN make): The command '/bin/sh -c make' returned a non-zero code: 2

The last lines of the failed step's own output follow (with BuildKit, those of the step it marks
``#N ERROR``; with the legacy builder, the log's end), and ``build.log`` is the evidence. Both
builders' step lines are read: the legacy builder's ``Step 2/2 : RUN make`` and BuildKit's
``#6 [2/2] RUN make``.
"""

from __future__ import annotations

import re

#: how many non-empty lines of the build log's end follow the cause
LOG_TAIL_LINES = 15
#: a step's text is cut to this many characters in the head line
STEP_CHARS = 120

_LEGACY_STEP = re.compile(r"^Step (\d+/\d+) : (.+)$")
_BUILDKIT_STEP = re.compile(r"^#(\d+) \[(?:[\w.-]+ )?(\d+/\d+)\] (.+)$")
#: a BuildKit step that failed: its vertex number
_BUILDKIT_FAILED = re.compile(r"^#(\d+) ERROR: ")
#: a line of a BuildKit step's own output: ``#N SECONDS text``
_BUILDKIT_OUTPUT = re.compile(r"^#(\d+) \d+\.\d+ ?(.*)$")


def last_step(log_text: str) -> str | None:
    """The build step that failed, as ``Step N/M (INSTRUCTION ...)``: the one BuildKit marks
    ``#N ERROR``, else the last step the log shows starting (the legacy builder runs one step at a
    time; BuildKit interleaves parallel stages, so its last step line need not be the failing one)."""
    lines = [ln.strip() for ln in log_text.splitlines()]
    failed = {m.group(1) for m in map(_BUILDKIT_FAILED.match, lines) if m}
    found = failed_found = None
    for vertex, step in filter(None, map(_step, lines)):
        found = step
        if vertex in failed:
            failed_found = step
    return failed_found or found


def _step(line: str) -> tuple[str | None, str] | None:
    """(BuildKit vertex number or None, ``Step N/M (INSTRUCTION ...)``) of a step line."""
    legacy = _LEGACY_STEP.match(line)
    buildkit = None if legacy else _BUILDKIT_STEP.match(line)
    if legacy:
        vertex, number, step = None, legacy.group(1), legacy.group(2)
    elif buildkit:
        vertex, number, step = buildkit.groups()
    else:
        return None
    step = step.strip()
    if len(step) > STEP_CHARS:
        step = step[:STEP_CHARS - 1] + "…"
    return vertex, f"Step {number} ({step})"


def tail(text: str, n: int = LOG_TAIL_LINES) -> str:
    """The last ``n`` non-empty lines of ``text``."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def failed_step_output(log_text: str, n: int = LOG_TAIL_LINES) -> str | None:
    """The last ``n`` lines the step BuildKit marks ``#N ERROR`` printed, without BuildKit's
    ``#N SECONDS`` prefixes (its parallel stages interleave, so the log's own tail may be another
    step's); None for a legacy builder's log."""
    lines = [ln.rstrip() for ln in log_text.splitlines()]
    failed = [m.group(1) for m in map(_BUILDKIT_FAILED.match, lines) if m]
    if not failed:
        return None
    own = [m.group(2) for m in map(_BUILDKIT_OUTPUT.match, lines)
           if m and m.group(1) == failed[-1] and m.group(2).strip()]
    return "\n".join(own[-n:])


def build_failure_reason(log_text: str, errors: list[str]) -> str:
    """``docker build failed[ at STEP]: ERROR`` then the log's last lines.

    ``errors`` are the engine's error messages in the order it sent them; the last one is the
    cause (a build stops at its first failing step, and the engine reports it last).
    """
    step = last_step(log_text)
    error = next((e.strip().splitlines()[0] for e in reversed(errors) if e.strip()), "")
    head = "docker build failed" + (f" at {step}" if step else "") + (f": {error}" if error else "")
    body = failed_step_output(log_text)
    if body is None:
        body = tail(log_text)
    return f"{head}\n{body}" if body else head
