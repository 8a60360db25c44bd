"""The strict, tiny shell reader behind ``runner_pins``: logical lines and plain words, nothing else.

Why not ``shlex``: shlex splits what bash would expand. A word like ``$(curl …)``, ``~``, ``*`` or
``${X}`` comes out of shlex as an ordinary string, and a recogniser built on it would call a line
"understood" that bash runs differently. This reader instead *refuses* every character that makes
bash do more than run a command with literal arguments (expansion, globbing, redirection, pipes,
subshells, background jobs, brace and history expansion), so a word it returns is exactly the
argument bash passes. The few constructs test.sh needs that use such characters (the uv installer
pipe, ``source $HOME/…``, ``"$PWD"``, ``$?``) are matched as whole fixed lines by the caller, never
lexed.

Input is bounded by the caller; everything here is linear in the input size.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# Characters a bare (unquoted) word may hold: no $ ` \ " ' | & ; < > ( ) { } [ ] * ? ~ ! # = is fine.
_BARE = re.compile(r"[A-Za-z0-9_./:=+@,%-]+")
# Inside quotes only plain printable text: no $ ` \ and no quote of either kind (no nesting games).
_QUOTED_BODY = re.compile(r"[^$`\\\"'\x00-\x1f\x7f]*")


@dataclass(frozen=True)
class LogicalLine:
    """One command line of the script after joining ``\\``-continued physical lines, as bash does."""

    number: int  # 1-based number of its first physical line
    text: str  # continuation backslashes and the newlines after them removed, stripped


class Refused(Exception):
    """A line holds something the strict reader does not understand; ``str()`` says what."""


def logical_lines(script: str) -> list[LogicalLine]:
    """Join continued lines (a ``\\`` that is the very last character) and drop blank lines.

    A backslash anywhere else is left in place, so the word lexer refuses it. A line that starts
    with ``#`` is one comment line even when it ends in ``\\`` (bash does not continue comments, so
    joining would hide the next command); a continuation past the end is refused.
    """
    out: list[LogicalLine] = []
    parts: list[str] = []
    start = 0
    for index, raw in enumerate(script.split("\n"), start=1):
        if not parts:
            start = index
            if raw.lstrip(" \t").startswith("#"):  # bash ends a comment at the newline, '\\' or not
                out.append(LogicalLine(start, raw.strip()))
                continue
        if raw.endswith("\\"):
            if "'" in raw or '"' in raw:  # inside quotes bash keeps the backslash-newline: refuse
                raise Refused(f"line {index}: a quote on a '\\'-continued line")
            parts.append(raw[:-1])
            continue
        parts.append(raw)
        text = "".join(parts).strip()  # bash drops backslash-newline and inserts nothing
        parts = []
        if text:
            out.append(LogicalLine(start, text))
    if parts:
        raise Refused(f"line {start}: a '\\' continuation runs past the end of the script")
    return out


def words(text: str) -> list[str]:
    """Split one command into literal words, or raise ``Refused``.

    Accepted: bare words of ``_BARE`` characters, and whole single- or double-quoted words without
    ``$``, backquote, backslash or another quote inside. ``&&`` is returned as its own word so the
    caller can split a list of commands. Anything else (a pipe, ``;``, a redirection, ``$``, a glob,
    a quote glued to a bare word) raises ``Refused`` naming the character.
    """
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch in " \t":
            i += 1
            continue
        if text.startswith("&&", i) and _ends_word(text, i + 2):
            out.append("&&")
            i += 2
            continue
        if ch in "\"'":
            end = text.find(ch, i + 1)
            body = text[i + 1 : end] if end > 0 else ""
            if end < 0 or not _QUOTED_BODY.fullmatch(body) or not _ends_word(text, end + 1):
                raise Refused(f"a quoted word it cannot take literally near {text[i:i + 40]!r}")
            out.append(body)
            i = end + 1
            continue
        m = _BARE.match(text, i)
        if not m or not _ends_word(text, m.end()):
            bad = text[m.end()] if m else ch
            raise Refused(f"the shell character {bad!r}")
        out.append(m.group(0))
        i = m.end()
    return out


def _ends_word(text: str, at: int) -> bool:
    return at >= len(text) or text[at] in " \t"
