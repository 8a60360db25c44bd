"""Make untrusted log text safe to embed in XML and Markdown.

Agent and verifier logs are arbitrary bytes: terminal colour codes, NULs, stray surrogates. XML
1.0 cannot carry most control characters at all (escaping does not help; a parser rejects
``&#0;``), so a JUnit file with one of them fails to load in CI and hides every result. We drop
ANSI escape sequences (noise in a report) and replace any other illegal character with a visible
``\\xNN`` so nothing is silently hidden.
"""

from __future__ import annotations

import re

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Everything outside XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | ...
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean_text(text: str) -> str:
    """``text`` without ANSI sequences, with XML-illegal characters shown as ``\\xNN``."""
    text = _ANSI.sub("", text)
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


#: escapes that arrive as text (a JSON-encoded CLI error line, a repr): shown as what they mean
_ESCAPED_BREAKS = re.compile(r"\\[nrt]")


def one_line(text: str, limit: int = 500) -> str:
    """``text`` as one readable line: no colour codes, no control characters, line breaks (real or
    written as a literal backslash-n) turned into spaces, cut at ``limit`` characters.

    For Prefect state messages: the UI and API show a state's message as one line of text, so a
    multi-line message read there as literal ``\\n`` and colour codes; the detail belongs in the
    logs and the trial's files, where the run's log lines and records keep it.
    """
    text = _ESCAPED_BREAKS.sub(" ", _ANSI.sub("", text))
    text = " ".join(text.split())
    return shorten(_ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text), limit)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis when it was longer."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"
