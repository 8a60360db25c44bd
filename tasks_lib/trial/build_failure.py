"""The reason a failed image build gives: its cause first, the log's last lines after it.

Every place a user looks first (the CLI's line, the report's invalid table, the trials artifact,
the flow log) shows the head of an invalid trial's reason, so the head must be the cause: the
build step that failed and the engine's error line, e.g.

    docker build failed at Step 2/2 (RUN make): The command '/bin/sh -c make' returned a non-zero code: 2

The last lines of the build log follow (the step's own output), and ``build.log`` is the
evidence. Both builders' step lines are read: the legacy builder's ``Step 2/2 : RUN make`` and
BuildKit's ``#6 [2/2] RUN make``.
"""

from __future__ import annotations

import re

#: how many non-empty lines of the build log's end follow the cause
LOG_TAIL_LINES = 15
#: a step's text is cut to this many characters in the head line
STEP_CHARS = 120

_LEGACY_STEP = re.compile(r"^Step (\d+/\d+) : (.+)$")
_BUILDKIT_STEP = re.compile(r"^#\d+ \[(?:[\w.-]+ )?(\d+/\d+)\] (.+)$")


def last_step(log_text: str) -> str | None:
    """The last build step the log shows starting, as ``Step N/M (INSTRUCTION ...)``."""
    found = None
    for line in log_text.splitlines():
        m = _LEGACY_STEP.match(line.strip()) or _BUILDKIT_STEP.match(line.strip())
        if m:
            step = m.group(2).strip()
            if len(step) > STEP_CHARS:
                step = step[:STEP_CHARS - 1] + "…"
            found = f"Step {m.group(1)} ({step})"
    return found


def tail(text: str, n: int = LOG_TAIL_LINES) -> str:
    """The last ``n`` non-empty lines of ``text``."""
    lines = [ln for ln in text.splitlines() if ln.strip()]
    return "\n".join(lines[-n:])


def build_failure_reason(log_text: str, errors: list[str]) -> str:
    """``docker build failed[ at STEP]: ERROR`` then the log's last lines.

    ``errors`` are the engine's error messages in the order it sent them; the last one is the
    cause (a build stops at its first failing step, and the engine reports it last).
    """
    step = last_step(log_text)
    error = next((e.strip().splitlines()[0] for e in reversed(errors) if e.strip()), "")
    head = "docker build failed" + (f" at {step}" if step else "") + (f": {error}" if error else "")
    body = tail(log_text)
    return f"{head}\n{body}" if body else head
