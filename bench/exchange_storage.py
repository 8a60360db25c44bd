"""What recording a long agent's model exchange costs on disk and in time: a 100-turn exchange.

Why: each request of a chat agent repeats the whole conversation and its tool definitions, so a
recording that stores each request whole grows with the square of the turns. tbflow's recorder
(``tasks_lib/gateway/exchange``) stores each request as what is new in it. This script records
the same synthetic exchange both ways, in the same run: the baseline (each request whole) and the
recorder; then reads it back and builds the trajectory.

Exchange: OpenAI Chat, 12 KB of tool definitions, a 1 KB system prompt, per turn one tool call
(a 200-byte command) answered by 2 KB of tool output; each reply streamed as SSE.

    .venv/bin/python bench/exchange_storage.py [--turns 100]
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tasks_lib.gateway.exchange.exchange_reader import read_exchange  # noqa: E402
from tasks_lib.gateway.gateway_http import Outcome  # noqa: E402
from tasks_lib.gateway.exchange.exchange_recorder import ExchangeRecorder  # noqa: E402
from tasks_lib.gateway.gateway_usage import GatewayUsage, TokenCount  # noqa: E402
from tasks_lib.pricing.price_table import default_price_table  # noqa: E402
from tasks_lib.trajectory.atif_models import Agent  # noqa: E402
from tasks_lib.trajectory.build_trajectory import build_trajectory  # noqa: E402




def _reply(turn: int) -> bytes:
    args = json.dumps({"command": f"step {turn}: " + "x" * 190})
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": f"Turn {turn}, running."}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": f"call_{turn}", "type": "function",
                                                                  "function": {"name": "bash", "arguments": ""}}]}}]},
              {"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "function": {"arguments": args}}]}}]},
              {"choices": [], "usage": {"prompt_tokens": 1000 + 600 * turn, "completion_tokens": 60}}]
    return "".join(f"data: {json.dumps(c)}\n\n" for c in chunks).encode() + b"data: [DONE]\n\n"


def exchange(turns: int) -> list[tuple[bytes, bytes]]:
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": "d" * 1000,
                                               "parameters": {"type": "object"}}} for i in range(12)]
    messages: list[dict] = [{"role": "system", "content": "s" * 1000}, {"role": "user", "content": "Do the task."}]
    out = []
    for turn in range(1, turns + 1):
        body = {"model": "gpt-4.1", "stream": True, "tools": tools, "messages": messages}
        reply = _reply(turn)
        out.append((json.dumps(body).encode(), reply))
        messages = messages + [{"role": "assistant", "content": f"Turn {turn}, running.", "tool_calls": [
            {"id": f"call_{turn}", "type": "function", "function": {"name": "bash", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": f"call_{turn}", "content": "o" * 2000}]
    return out


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=100)
    turns = parser.parse_args().turns
    calls = exchange(turns)
    with tempfile.TemporaryDirectory() as tmp:
        whole = Path(tmp) / "whole.jsonl"
        t0 = time.perf_counter()
        with whole.open("w") as fh:  # the baseline: every request and raw reply stored whole
            for request, reply in calls:
                fh.write(json.dumps({"request": json.loads(request), "reply": reply.decode()}) + "\n")
        baseline_sec = time.perf_counter() - t0
        path, recorder, usage = Path(tmp) / "delta.jsonl", ExchangeRecorder(lambda s: s), GatewayUsage()
        recorder.start("t", path)
        t0 = time.perf_counter()
        for n, (request, reply) in enumerate(calls, 1):
            tokens = TokenCount(1000 + 600 * n, 60)
            usage.add(200, tokens, None)
            recorder.record("t", "POST", "/v1/chat/completions", booked(tokens, request, reply),
                            time.monotonic())
        record_sec = time.perf_counter() - t0
        t0 = time.perf_counter()
        traj = build_trajectory(read_exchange(path), Agent(name="bench", version="1"), usage, default_price_table())
        build_sec = time.perf_counter() - t0
        sent = sum(len(r) for r, _ in calls)
        print(json.dumps({"turns": turns, "bytes_sent_in_requests": sent,
                          "baseline_whole_bytes": whole.stat().st_size, "baseline_sec": round(baseline_sec, 3),
                          "recorded_bytes": path.stat().st_size, "record_sec": round(record_sec, 3),
                          "record_ms_per_call": round(record_sec * 1000 / turns, 2),
                          "ratio": round(whole.stat().st_size / path.stat().st_size, 1),
                          "trajectory_steps": len(traj.steps), "trajectory_build_sec": round(build_sec, 3),
                          "trajectory_bytes": len(traj.model_dump_json(exclude_none=True))}, indent=1))


def booked(tokens: TokenCount, request: bytes, reply: bytes) -> Outcome:
    """A streamed 200 as the gateway books it."""
    out = Outcome()
    out.status, out.tokens, out.request, out.reply, out.sse = 200, tokens, request, reply, True
    return out


if __name__ == "__main__":
    main()
