"""Which headers cross the gateway, both ways: allowlists, per API on the way to the provider.

Why allowlists: the agent is untrusted and the provider's key is the operator's.

* **To the provider** a request carries only what its API needs to be served, per family (from
  the providers' API references): the body's ``content-type``, ``accept`` and ``user-agent`` for
  all; Anthropic's required ``anthropic-version``, and of ``anthropic-beta`` only the betas that
  change the wire format (streamed tool input, interleaved thinking, longer output, context
  editing); OpenAI's ``openai-beta`` (an API-version flag some CLIs send). Everything else is
  dropped, above all what would steer the operator's account: ``OpenAI-Organization`` and
  ``OpenAI-Project`` (whose quota and billing a call counts against), ``x-goog-user-project``,
  betas that reach account resources or change the price (files, skills, MCP servers, code
  execution, a 1M context, hour-long cache writes, OAuth), ``X-Forwarded-For`` and any other
  proxy or tracing header. The gateway adds the key's own header and ``accept-encoding: identity``.
* **To the agent** a provider's reply headers describe the account behind the key (organisation
  and project ids, rate-limit quotas, cookies) and an error reply may echo what was sent. The
  agent needs only what an HTTP client and the providers' SDKs act on: the body's type, length
  and encoding, and the retry hints (``retry-after``, ``retry-after-ms``, ``x-should-retry``)
  their retry loops read, plus the request id a CLI prints with an error. Everything else is
  dropped, on success and error replies alike, and every kept value is redacted of the keys.
"""

from __future__ import annotations

from typing import Callable, Iterable

RELAYED = frozenset({"content-type", "content-length", "content-encoding", "cache-control", "retry-after",
                     "retry-after-ms", "x-should-retry", "request-id", "x-request-id"})

_COMMON = frozenset({"content-type", "accept", "user-agent"})
#: the request headers each API family is sent (the key's header is the gateway's own)
FORWARDED: dict[str, frozenset[str]] = {
    "openai": _COMMON | {"openai-beta"},
    "anthropic": _COMMON | {"anthropic-version", "anthropic-beta"},
    "gemini": _COMMON,
}
#: Anthropic betas (their name without the date) that change only the wire format or the model's
#: handling of the request, not the account's resources or the price
ANTHROPIC_BETAS = frozenset({"interleaved-thinking", "fine-grained-tool-streaming", "token-efficient-tools",
                             "output-128k", "context-management", "prompt-caching", "claude-code"})


def forwarded_headers(family: str, items: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """The agent's request headers that go on to ``family``'s provider (names lower-cased)."""
    allowed = FORWARDED.get(family, _COMMON)
    kept = []
    for name, value in items:
        name = name.lower()
        if name == "anthropic-beta":
            value = ",".join(b for b in (p.strip() for p in value.split(",")) if _beta_name(b) in ANTHROPIC_BETAS)
            if not value:
                continue
        if name in allowed:
            kept.append((name, value))
    return kept


def _beta_name(beta: str) -> str:
    """``interleaved-thinking-2025-05-14`` → ``interleaved-thinking``; ``claude-code-20250219`` → ``claude-code``."""
    parts = beta.lower().split("-")
    while parts and parts[-1].isdigit():
        parts.pop()
    return "-".join(parts)


def relayed_headers(items: Iterable[tuple[str, str]], redact: Callable[[str], str], *,
                    keep_length: bool = True) -> list[tuple[str, str]]:
    """The upstream headers passed on to the agent (``keep_length=False`` when the body is rewritten)."""
    kept = RELAYED if keep_length else RELAYED - {"content-length"}
    return [(name, redact(value)) for name, value in items if name.lower() in kept]
