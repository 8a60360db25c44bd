"""A model reply containing U+2028 / U+2029 / U+0085 lost the CLI's usage line: Node's and Rust's
JSON writers leave these characters raw inside strings, and ``str.splitlines()`` broke the line
there, so the usage-bearing event no longer parsed and the trial was ``invalid: harness``. Logs
are now split on ``\\n`` only (and read as a stream)."""

import json

import pytest

from harnesses.cli import usage_parsers
from shared_cli_jobs import ODD as HAPPY_ODD

ODD = "done\u2028line\u2029para\u0085next"


def _raw(obj) -> str:
    return json.dumps(obj, ensure_ascii=False)  # like JSON.stringify / serde_json: the characters stay raw


LOGS = {
    "claude": (usage_parsers.claude_usage, [
        {"type": "result", "is_error": False, "result": ODD,
         "usage": {"input_tokens": 280, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                   "output_tokens": 20}}], 300),
    "pi": (usage_parsers.pi_usage, [
        {"type": "message_end", "message": {"role": "assistant", "content": [{"type": "text", "text": ODD}],
                                            "usage": {"input": 160, "output": 5, "cacheRead": 0, "cacheWrite": 0}}}],
           165),
    "opencode": (usage_parsers.opencode_usage, [
        {"type": "step_finish", "part": {"reason": ODD, "tokens": {"input": 120, "output": 15, "reasoning": 0,
                                                                   "cache": {"read": 0, "write": 0}}}}], 135),
    "codex": (usage_parsers.codex_usage, [
        {"type": "turn.completed", "note": ODD, "usage": {"input_tokens": 160, "output_tokens": 5}}], 165),
}


@pytest.mark.parametrize("cli", sorted(LOGS))
def test_parsers_keep_lines_with_unicode_separators_whole(tmp_path, cli):
    parse, events, total = LOGS[cli]
    log = tmp_path / f"{cli}.jsonl"
    log.write_text("".join(_raw(e) + "\n" for e in events), encoding="utf-8")
    assert "\u2028" in log.read_text(encoding="utf-8")
    usage = parse(log)
    assert usage is not None and usage.total_tokens == total


def test_reply_with_line_separators_keeps_the_cli_log_witness(happy_cli_job):
    """pi (Node) writes the reply's text raw on the same line as its usage (the shared happy job's
    final reply is ``ODD``). (claude-code writes the same text on its result line but escapes
    these characters as ``\\u2028``.)"""
    assert HAPPY_ODD == ODD
    for cli in ["pi"]:
        rec = happy_cli_job.record(cli)
        log = (happy_cli_job.job_dir / "trials" / rec.trial_id / rec.agent.stdout_log).read_text("utf-8")
        assert "\u2028" in log, cli  # the CLI really wrote it raw
        assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (cli, rec.validity)
        assert rec.validity.reached_model_by == "cli_log", (cli, rec.validity)
        # both replies counted (135 + 165): with the old split, the final reply's line was lost
        assert rec.agent.usage.total_tokens == 300, (cli, rec.agent.usage)
