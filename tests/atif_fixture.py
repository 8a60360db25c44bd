"""A small hand-written ATIF trajectory (Harbor 0.26's ``Trajectory`` format, schema ATIF-v1.6).

Written by hand from Harbor's public models (``harbor/models/trajectories/*.py``) so the report
and export tests do not depend on how tbflow records trajectories: a user step, two agent steps
with a tool call each and the observation that the next request carried back, per-step metrics,
and ``final_metrics``. ``hostile`` puts markup and a terminal escape into the tool output.
"""

from __future__ import annotations

import json
from pathlib import Path

HOSTILE_OUTPUT = "<script>alert(1)</script>\x1b]52;c;cGF3bmVk\x07 done"


def trajectory(long_output_lines: int = 3, hostile: bool = False) -> dict:
    output = "\n".join(f"line {i}" for i in range(long_output_lines))
    return {
        "schema_version": "ATIF-v1.6",
        "session_id": "session-1",
        "agent": {"name": "codex", "version": "0.9.1", "model_name": "openai/gpt-test"},
        "steps": [
            {"step_id": 1, "source": "user", "message": "Write hello.txt containing 'hello'."},
            {"step_id": 2, "source": "agent", "message": "I will create the file.",
             "reasoning_content": "The task wants one file.",
             "tool_calls": [{"tool_call_id": "call_1", "function_name": "shell",
                             "arguments": {"cmd": "echo hello > hello.txt && ls"}}],
             "observation": {"results": [{"source_call_id": "call_1",
                                          "content": HOSTILE_OUTPUT if hostile else output}]},
             "metrics": {"prompt_tokens": 1200, "completion_tokens": 80, "cached_tokens": 1000,
                         "cost_usd": 0.0021}},
            {"step_id": 3, "source": "agent", "message": "Done: hello.txt is written.",
             "metrics": {"prompt_tokens": 1350, "completion_tokens": 20, "cost_usd": 0.0017}},
        ],
        "final_metrics": {"total_prompt_tokens": 2550, "total_completion_tokens": 100,
                          "total_cached_tokens": 1000, "total_cost_usd": 0.0038, "total_steps": 3},
    }


def write_trajectory(trial_dir: Path, **kwargs: object) -> Path:
    path = Path(trial_dir) / "trajectory.json"
    path.write_text(json.dumps(trajectory(**kwargs), indent=2), encoding="utf-8")  # type: ignore[arg-type]
    return path
