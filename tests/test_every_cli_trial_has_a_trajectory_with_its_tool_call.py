"""Every built-in and declared CLI (codex on Responses, claude-code on Messages, opencode, pi and
qwen-code on Chat, gemini-cli on Gemini), run for real against the mock model: its trial has a
host-written ``trajectory.json`` showing the shell call that solved the task, that call's output
as its observation, per-step tokens summing to the gateway's count, ``final_metrics`` equal to the
gateway usage, no trial token in it, and every file loads with Harbor's own Trajectory model."""

import json

from harbor_check import harbor_loads
from shared_cli_jobs import HAPPY_CLIS

from tasks_lib.gateway.model_gateway import TOKEN_PREFIX

SOLVING = "echo solved > /app/done.txt"


def test_each_cli_trajectory_shows_the_solving_call_and_its_output(happy_cli_job):
    files = []
    for cli in HAPPY_CLIS:
        rec = happy_cli_job.record(cli)
        assert rec.agent.trajectory == "trajectory.json" and rec.agent.trajectory_problem is None, (cli, rec.agent)
        path = happy_cli_job.job_dir / "trials" / rec.trial_id / "trajectory.json"
        files.append(path)
        text = path.read_text()
        assert TOKEN_PREFIX not in text, cli
        t = json.loads(text)
        agent_steps = [s for s in t["steps"] if s["source"] == "agent"]
        solving = [(s, c) for s in agent_steps for c in s.get("tool_calls", []) if SOLVING in json.dumps(c["arguments"])]
        assert solving, (cli, [s.get("tool_calls") for s in agent_steps])
        step, call = solving[0]
        linked = [r for r in (step.get("observation") or {}).get("results", []) if r.get("source_call_id") ==
                  call["tool_call_id"]]
        assert linked, (cli, step)
        gw = rec.agent.gateway_usage
        assert (t["final_metrics"]["total_prompt_tokens"], t["final_metrics"]["total_completion_tokens"]) == (
            gw.input_tokens, gw.output_tokens), cli
        assert sum(s["metrics"]["prompt_tokens"] for s in agent_steps) == gw.input_tokens, cli
    assert harbor_loads(*files).count("valid ATIF") == len(HAPPY_CLIS)
