"""Token usage read from upstream model responses, as they stream through the gateway.

Why: the gateway is the second witness for "the harness reached the model". The CLI's own event
log is the first; this one comes from what the provider actually sent back, so the two can be
compared and a disagreement flagged. It must work on a stream in flight (the gateway never
buffers a streaming reply), so parsing is incremental: feed chunks as they pass, ask at the end.

Where usage sits, per API:

* OpenAI Responses: SSE ``response.completed`` (also ``.incomplete``/``.failed``) →
  ``response.usage.{input_tokens, output_tokens}``; JSON → ``usage`` with the same names.
* OpenAI Chat Completions: SSE chunk with a non-null ``usage`` (the last chunk when the client
  asked for ``stream_options.include_usage``) → ``{prompt_tokens, completion_tokens}``; JSON → ``usage``.
* Anthropic Messages: SSE ``message_start.message.usage.input_tokens`` and the final
  ``message_delta.usage.output_tokens`` (cumulative); JSON → ``usage``. Cache tokens are left
  out, as in Claude Code's own ``result.usage.input_tokens``, so the two witnesses compare.
* Gemini ``generateContent`` / ``streamGenerateContent``: ``usageMetadata`` on the reply (JSON), on
  each SSE chunk (cumulative, so the last one counts) or on the last element of a JSON array (a
  stream without ``alt=sse``) → input ``promptTokenCount`` (+ ``toolUsePromptTokenCount``),
  output ``candidatesTokenCount`` + ``thoughtsTokenCount`` (Gemini counts thinking apart from the
  candidates; every other API counts it as output).

A response without usage yields None, never a made-up 0. ``GatewayUsage`` is the per-trial sum
that crosses into the trial record.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel, Field

from tasks_lib.gateway.gateway_policy import RefusedRequest

#: at most this many refused requests are kept as evidence per trial (all are counted in ``errors``)
MAX_REFUSED_KEPT = 20
#: A JSON body or one SSE event larger than this is not parsed for usage (it is still relayed).
MAX_PARSE_BYTES = 32 * 1024 * 1024


@dataclass(frozen=True)
class TokenCount:
    input_tokens: int
    output_tokens: int


class GatewayUsage(BaseModel):
    """What the gateway saw for one trial. Tokens come only from upstream responses carrying usage.

    ``requests`` counts every request the trial's token was accepted for, whatever its outcome;
    ``errors`` maps HTTP status (>= 400, gateway-made ones included) to a count.
    ``responses_with_usage`` counts successful responses only: an error is never the model
    answering, whatever its body says, so it is what decides "reached the model". The token sums
    also keep what a reply that was cut later had already reported (a stream that stalled after
    its first event is booked as the gateway's 504 but was metered by the provider).
    ``refused`` is the evidence of requests outside the trial's provider and model (the first
    ``MAX_REFUSED_KEPT``; each is also a 403 in ``errors``), see ``gateway_policy``.
    """

    requests: int = 0
    responses_with_usage: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    errors: dict[int, int] = Field(default_factory=dict)
    last_error: str | None = None
    refused: list[RefusedRequest] = Field(default_factory=list)

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def add(self, status: int, tokens: TokenCount | None, error: str | None) -> None:
        """Book one request (the caller holds the lock that makes this thread-safe)."""
        self.requests += 1
        if tokens is not None:
            if status < 400:
                self.responses_with_usage += 1
            self.input_tokens += tokens.input_tokens
            self.output_tokens += tokens.output_tokens
        if status >= 400:
            self.errors[status] = self.errors.get(status, 0) + 1
            self.last_error = error

    def refuse(self, evidence: RefusedRequest) -> None:
        """Keep the evidence of one refused request (its 403 is booked by ``add``)."""
        if len(self.refused) < MAX_REFUSED_KEPT:
            self.refused.append(evidence)


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


def from_usage_metadata(meta: object) -> TokenCount | None:
    """A Gemini ``usageMetadata`` object."""
    if not isinstance(meta, dict):
        return None
    return TokenCount(_int(meta.get("promptTokenCount")) + _int(meta.get("toolUsePromptTokenCount")),
                      _int(meta.get("candidatesTokenCount")) + _int(meta.get("thoughtsTokenCount")))


def from_usage_object(usage: object) -> TokenCount | None:
    """A ``usage`` object of any of the three APIs (Chat's names or Responses/Anthropic's)."""
    if not isinstance(usage, dict):
        return None
    if "prompt_tokens" in usage or "completion_tokens" in usage:
        return TokenCount(_int(usage.get("prompt_tokens")), _int(usage.get("completion_tokens")))
    if "input_tokens" in usage or "output_tokens" in usage:
        return TokenCount(_int(usage.get("input_tokens")), _int(usage.get("output_tokens")))
    return None


def usage_from_json(body: bytes) -> TokenCount | None:
    """Usage of a non-streaming JSON reply (the top-level ``usage``; Responses also nests it)."""
    if len(body) > MAX_PARSE_BYTES:
        return None
    try:
        obj = json.loads(body)
    except ValueError:
        return None
    if isinstance(obj, list):  # a Gemini stream as one JSON array: the last chunk with usage counts
        metas = [c["usageMetadata"] for c in obj if isinstance(c, dict) and isinstance(c.get("usageMetadata"), dict)]
        return from_usage_metadata(metas[-1]) if metas else None
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("usageMetadata"), dict):
        return from_usage_metadata(obj["usageMetadata"])
    found = from_usage_object(obj.get("usage"))
    if found is None and isinstance(obj.get("response"), dict):
        found = from_usage_object(obj["response"].get("usage"))
    return found


class SseUsageParser:
    """Incremental usage extraction from a ``text/event-stream`` body of any of the four APIs."""

    def __init__(self) -> None:
        self._pending = bytearray()
        self._data: list[bytes] = []
        self._data_size = 0
        self._last: TokenCount | None = None
        self._anthropic_in: int | None = None
        self._anthropic_out: int | None = None

    def feed(self, chunk: bytes) -> None:
        self._pending += chunk
        start = 0
        while True:
            end = self._pending.find(b"\n", start)
            if end < 0:
                break
            self._line(bytes(self._pending[start:end]).rstrip(b"\r"))
            start = end + 1
        del self._pending[:start]
        if len(self._pending) > MAX_PARSE_BYTES:  # a runaway line: give up on it, keep relaying
            self._pending.clear()

    def _line(self, line: bytes) -> None:
        if not line:
            self._dispatch()
        elif line.startswith(b"data:"):
            part = line[5:].removeprefix(b" ")
            self._data_size += len(part)
            if self._data_size <= MAX_PARSE_BYTES:
                self._data.append(part)

    def _dispatch(self) -> None:
        data, self._data, self._data_size = b"\n".join(self._data), [], 0
        if b"usage" not in data:  # cheap filter: most events are text deltas
            return
        try:
            event = json.loads(data)
        except ValueError:
            return
        if isinstance(event, dict):
            self._event(event)

    def _event(self, event: dict) -> None:
        kind = event.get("type")
        if kind == "message_start" and isinstance(event.get("message"), dict):
            usage = event["message"].get("usage")
            if isinstance(usage, dict):
                self._anthropic_in = _int(usage.get("input_tokens"))
                self._anthropic_out = _int(usage.get("output_tokens"))
        elif kind == "message_delta":
            usage = event.get("usage")
            if isinstance(usage, dict):
                if "output_tokens" in usage:
                    self._anthropic_out = _int(usage.get("output_tokens"))
                if self._anthropic_in is None and "input_tokens" in usage:
                    self._anthropic_in = _int(usage.get("input_tokens"))
        elif isinstance(event.get("usageMetadata"), dict):
            self._last = from_usage_metadata(event["usageMetadata"]) or self._last
        elif isinstance(event.get("response"), dict) and event["response"].get("usage"):
            self._last = from_usage_object(event["response"]["usage"]) or self._last
        elif event.get("usage"):
            self._last = from_usage_object(event["usage"]) or self._last

    def result(self) -> TokenCount | None:
        """Usage seen so far (a cut-off stream still reports what arrived)."""
        if self._pending:
            self._line(bytes(self._pending))
            self._pending.clear()
        self._dispatch()
        if self._anthropic_in is not None or self._anthropic_out is not None:
            return TokenCount(self._anthropic_in or 0, self._anthropic_out or 0)
        return self._last
