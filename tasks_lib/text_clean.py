"""Show untrusted text (from the container, a task, a log) so it is seen, never interpreted.

Agent and verifier text is arbitrary: terminal escapes (``ESC]52`` writes the operator's
clipboard, ``ESC[2J`` clears the screen, ``ESC]8`` hides a link), NULs, stray surrogates, bidi
overrides that make a line read differently from what it holds. ``visible`` turns every such
character into a visible escape (``\\x1b``, ``\\u202e``): the terminal, report.md and junit.xml
show the same text, none of it acts, and nothing is silently dropped. It also keeps the XML
guarantee: every character XML 1.0 cannot carry (escaping does not help; a parser rejects
``&#0;``) is among those escaped, so a junit.xml always parses.

The escapes are not themselves escaped (a ``\\`` stays a ``\\``), so ``visible`` is idempotent:
text rendered twice (a log tail kept in results.json, then put in junit.xml) reads the same.

Records keep the text as it came (``ContainerText`` only makes it serialisable); escaping happens
when it is shown. One exception is Prefect's UI (``clean_text``, ``one_line``): there terminal
colour codes were noise in a one-line state message (issue 10) and are dropped, the rest escaped.
The other is file names in evidence files and flag messages (``escaped_name``): evidence is plain
text read with ``cat``, so names are stored escaped there (issue 38).
"""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import BeforeValidator

#: C0 controls but tab and newline, DEL, C1 controls, bidi marks, overrides and isolates, lone
#: surrogates, and the two non-characters XML 1.0 excludes
_UNSHOWABLE = ("\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
               "\ud800-\udfff\ufffe\uffff")
_IN_LINES = re.compile(f"[{_UNSHOWABLE}]")
_IN_ONE_LINE = re.compile(f"[\t\n{_UNSHOWABLE}]")
_SHORT = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _SHORT:
        return _SHORT[char]
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def visible(text: str, multiline: bool = False) -> str:
    """``text`` with every character that could act or hide shown as an escape.

    ``multiline=True`` keeps ``\\n`` and ``\\t`` for places that show lines (a JUnit failure's
    text, a log tail); otherwise they are escaped too, so the text cannot start a line of its own
    (a forged progress line, a Markdown heading). ``\\r`` is always escaped: it would let a line
    overwrite itself on a terminal.
    """
    return (_IN_LINES if multiline else _IN_ONE_LINE).sub(_escape, text)


def clean_text(text: str) -> str:
    """For Prefect's UI and run logs: ``text`` without terminal colour codes (noise there), the
    rest as ``visible`` shows it, line breaks kept. Reports and the terminal use ``visible``."""
    return visible(_ANSI.sub("", text), multiline=True)


def one_line(text: str, limit: int | None = None) -> str:
    """``text`` as one readable line: no colour codes, control characters shown as escapes, every
    run of whitespace (line breaks too) one space; cut at ``limit`` characters if given.

    For Prefect state messages: the UI shows a state's message as one line, where a multi-line
    message read as literal ``\\n`` with colour codes. Nothing else is rewritten (a ``'1.2.3\\n'``
    in a message is the repr of a bad value, and stays); the line breaks live on in the logs and
    the records, which keep the full text.
    """
    text = visible(" ".join(_ANSI.sub("", text).split()))
    return text if limit is None else shorten(text, limit)


def shorten(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters with an ellipsis when it was longer."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + "…"


_SURROGATE = re.compile("[\ud800-\udfff]")


def _byte_or_code(match: re.Match[str]) -> str:
    """A lone surrogate as ``\\xNN`` when it stands for an undecodable byte (``os.fsdecode``'s
    surrogateescape), else as ``\\uXXXX``."""
    code = ord(match.group())
    return f"\\x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"\\u{code:04x}"


def _escaped(value: object) -> object:
    """Text that can always be written as JSON: a file name or command line from the container may
    hold any bytes, which Python keeps as lone surrogates; they are stored as ``\\xNN`` escapes.
    Any other lone surrogate (from a JSON ``\\ud800`` the agent wrote) becomes ``\\uXXXX`` instead
    of an encoding error that would lose the record. Nothing else is changed: the record keeps
    the text as evidence, escape sequences included, and is escaped where it is shown."""
    if isinstance(value, str):
        return _SURROGATE.sub(_byte_or_code, value)
    return value


def escaped_name(text: str) -> str:
    """A file name (or a line naming files) from the container as tbflow stores it in an evidence
    file or a flag's message: undecodable bytes as ``\\xNN`` (as ``ContainerText``), every other
    character ``visible`` escapes shown as an escape, newlines too. A name holds any bytes but
    ``/`` and NUL: stored raw, ``cat`` of the evidence would act on its ``ESC]52`` and a newline in
    it would forge a line of its own (issue 38). Idempotent, like ``visible``."""
    return visible(_SURROGATE.sub(_byte_or_code, text))


#: text that came out of the container (names, command lines): always serialisable
ContainerText = Annotated[str, BeforeValidator(_escaped)]
