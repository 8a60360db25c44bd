"""Make untrusted log text safe to embed in XML and Markdown.

Agent and verifier logs are arbitrary bytes: terminal colour codes, NULs, stray surrogates. XML
1.0 cannot carry most control characters at all (escaping does not help; a parser rejects
``&#0;``), so a JUnit file with one of them fails to load in CI and hides every result. We drop
ANSI escape sequences (noise in a report) and replace any other illegal character with a visible
``\\xNN`` so nothing is silently hidden. ``ContainerText`` is the pydantic type of such text
inside persisted records.
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
# Everything outside XML 1.0's Char production: #x9 | #xA | #xD | [#x20-#xD7FF] | [#xE000-#xFFFD] | ...
_ILLEGAL_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def clean_text(text: str) -> str:
    """``text`` without ANSI sequences, with XML-illegal characters shown as ``\\xNN``."""
    text = _ANSI.sub("", text)
    return _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` as one readable line: no colour codes, no control characters, every run of
    whitespace (line breaks too) one space; cut at ``limit`` characters if given.

    For Prefect state messages: the UI shows a state's message as one line, where a multi-line
    message read as literal ``\\n`` with colour codes. Nothing else is rewritten (a ``'1.2.3\\n'``
    in a message is the repr of a bad value, and stays); the line breaks live on in the logs and
    the records, which keep the full text.
    """
    text = " ".join(_ANSI.sub("", text).split())
    text = _ILLEGAL_XML.sub(lambda m: f"\\x{ord(m.group()):02x}", text)
    return text if limit is None else shorten(text, limit)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis when it was longer."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


def _escaped(value: object) -> object:
    """Text that can always be written as JSON: a file name or command line from the container may
    hold any bytes, which Python keeps as lone surrogates; they are stored as ``\\xNN`` escapes."""
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


#: text that came out of the container (names, command lines): always serialisable
ContainerText = Annotated[str, BeforeValidator(_escaped)]
