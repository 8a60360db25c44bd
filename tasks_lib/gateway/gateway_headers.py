"""Which upstream reply headers reach the agent: an allowlist, values redacted.

Why an allowlist: a provider's reply headers describe the account behind the key (organisation
and project ids, rate-limit quotas, cookies) and an error reply may echo what was sent. The agent
is untrusted; it needs only what an HTTP client and the providers' SDKs act on: the body's type,
length and encoding, and the retry hints (``retry-after``, ``retry-after-ms``, ``x-should-retry``)
their retry loops read, plus the request id a CLI prints with an error. Everything else is dropped,
on success and error replies alike, and every kept value is redacted of the keys.
"""

from __future__ import annotations

from typing import Callable, Iterable

RELAYED = frozenset({"content-type", "content-length", "content-encoding", "cache-control", "retry-after",
                     "retry-after-ms", "x-should-retry", "request-id", "x-request-id"})


def relayed_headers(items: Iterable[tuple[str, str]], redact: Callable[[str], str], *,
                    keep_length: bool = True) -> list[tuple[str, str]]:
    """The upstream headers passed on to the agent (``keep_length=False`` when the body is rewritten)."""
    kept = RELAYED if keep_length else RELAYED - {"content-length"}
    return [(name, redact(value)) for name, value in items if name.lower() in kept]
