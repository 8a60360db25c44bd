"""tbflow-agent's tools and what the model sees of their results.

Two tools: ``bash`` runs one command in the task's container (``ContainerEnv.exec``: its own
session, killed at its timeout), ``task_complete`` ends the episode. A tool result shows the exit
code, whether the command was cut off, its output bounded to ``MAX_OUTPUT_CHARS`` (head and tail:
errors are usually at the end, context at the start), and the time left.
"""

from __future__ import annotations

from tasks_lib.trial.host_agent_api import ExecOutput

MAX_OUTPUT_CHARS = 10_000
#: a command's own timeout when the model gives none (the time left caps it in any case)
DEFAULT_COMMAND_TIMEOUT_SEC = 600.0

TOOLS = [
    {"type": "function", "function": {
        "name": "bash",
        "description": "Run a bash command in the task's environment and return its exit code and output "
                       "(stdout and stderr together). Each call is a fresh shell in the working directory; "
                       "use absolute paths or cd in the command. Long output is shortened.",
        "parameters": {"type": "object", "properties": {
            "command": {"type": "string", "description": "the bash command to run"},
            "timeout_sec": {"type": "number", "description": "kill the command after this many seconds "
                                                              f"(default {DEFAULT_COMMAND_TIMEOUT_SEC:g})"}},
            "required": ["command"]}}},
    {"type": "function", "function": {
        "name": "task_complete",
        "description": "Call this once the task is done (or cannot be done); it ends the episode.",
        "parameters": {"type": "object", "properties": {
            "summary": {"type": "string", "description": "what was done"}}}}},
]


def bound_output(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """``text`` with at most ``limit`` characters of it kept: its head and tail around a marker
    saying how much was left out."""
    if len(text) <= limit:
        return text
    head = limit // 2
    tail = limit - head
    return f"{text[:head]}\n[... {len(text) - limit} characters left out ...]\n{text[-tail:]}"


def time_left_text(seconds: float) -> str:
    """``[time left: 1h 02m 03s]``-style text for the model."""
    s = max(0, int(seconds))
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    shown = f"{h}h {m:02d}m {sec:02d}s" if h else f"{m}m {sec:02d}s" if m else f"{sec}s"
    return f"[time left: {shown}]"


def result_text(out: ExecOutput, seconds_left: float) -> str:
    """What the model reads of one ``bash`` call."""
    if out.error:
        status = f"tbflow could not run the command: {out.error}"
    elif out.timed_out:
        status = f"the command was killed after {out.duration_sec:.0f} s (timeout)"
    else:
        status = f"exit code {out.exit_code}"
    cut = (f"\n[the output was {out.output_bytes} bytes; only its first {len(out.output.encode())} came back]"
           if out.truncated else "")
    return f"{status}\n{bound_output(out.output)}{cut}\n{time_left_text(seconds_left)}"
