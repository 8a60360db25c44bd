"""Reasoning, where the API returns it, reaches the agent step's ``reasoning_content`` from a
stream: OpenAI Chat's ``reasoning_content`` deltas, Anthropic's ``thinking_delta`` blocks, the
Responses API's reasoning summaries, Gemini's ``thought`` parts; and the message text is not mixed
with it."""

import pytest

from tasks_lib.gateway.exchange.sse_reassembly import reassemble
from tasks_lib.trajectory import from_anthropic, from_chat, from_gemini, from_responses

CASES = {
    "openai-chat": (from_chat, [
        {"choices": [{"index": 0, "delta": {"role": "assistant", "reasoning_content": "think "}}]},
        {"choices": [{"index": 0, "delta": {"reasoning_content": "hard"}}]},
        {"choices": [{"index": 0, "delta": {"content": "answer"}}]}]),
    "anthropic-messages": (from_anthropic, [
        {"type": "message_start", "message": {"model": "c", "usage": {"input_tokens": 1}}},
        {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking", "thinking": ""}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "think "}},
        {"type": "content_block_delta", "index": 0, "delta": {"type": "thinking_delta", "thinking": "hard"}},
        {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}},
        {"type": "content_block_delta", "index": 1, "delta": {"type": "text_delta", "text": "answer"}}]),
    "openai-responses": (from_responses, [
        {"type": "response.completed", "response": {"model": "g", "output": [
            {"type": "reasoning", "summary": [{"type": "summary_text", "text": "think hard"}]},
            {"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "answer"}]}]}}]),
    "gemini-generate-content": (from_gemini, [
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "think ", "thought": True}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "hard", "thought": True}]}}]},
        {"candidates": [{"content": {"role": "model", "parts": [{"text": "answer"}]}}]}]),
}


@pytest.mark.parametrize("api", CASES)
def test_reasoning_and_message_apart(api):
    conv, events = CASES[api]
    turn = conv.turn(reassemble(api, events))
    assert (turn.reasoning, turn.message) == ("think hard", "answer")
