"""The user documentation as the tests read it: README.md and docs/*.md, their headings' anchors
(GitHub's rules) and their relative links.

Why GitHub's rules: the docs are read on GitHub (and in editors that follow it), where a heading's
anchor is its text lower-cased, with every character but letters, digits, ``_``, ``-`` and spaces
dropped and spaces turned into ``-``; a repeated anchor gets ``-1``, ``-2``, ... Text in code fences
and inline code is neither a heading nor a link.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"

_FENCE = re.compile(r"^(```|~~~).*?^\1[^\n]*$", re.M | re.S)
_INLINE_CODE = re.compile(r"`[^`\n]*`")
_LINK = re.compile(r"\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
_HTML_ANCHOR = re.compile(r"<a\s+(?:id|name)=\"([^\"]+)\"")


def pages() -> list[Path]:
    """README.md and every Markdown page under docs/."""
    return [README, *sorted(DOCS.glob("*.md"))]


def documented_text() -> str:
    """All of the user documentation, as one text."""
    return "\n".join(p.read_text(encoding="utf-8") for p in pages())


def without_code_blocks(text: str) -> str:
    return _FENCE.sub("", text)


def slug(heading: str) -> str:
    """GitHub's anchor of a heading's text."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())  # a link in a heading: its text
    text = re.sub(r"<[^>]+>", "", text).lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def headings(text: str) -> list[tuple[int, str]]:
    """(level, text) of each ATX heading outside code blocks."""
    return [(len(m.group(1)), m.group(2)) for m in re.finditer(r"^(#{1,6})\s+(.+?)\s*#*\s*$",
                                                                without_code_blocks(text), re.M)]


def anchors(text: str) -> set[str]:
    """Every anchor a link into this page may name: headings (numbered when repeated) and <a id>."""
    seen: dict[str, int] = {}
    out = set(_HTML_ANCHOR.findall(text))
    for _, heading in headings(text):
        base = slug(heading)
        n = seen.get(base, 0)
        seen[base] = n + 1
        out.add(base if n == 0 else f"{base}-{n}")
    return out


def relative_links(text: str) -> list[str]:
    """Link targets that are not URLs (a path, a path#anchor or #anchor), outside code."""
    prose = _INLINE_CODE.sub("", without_code_blocks(text))
    return [t for t in _LINK.findall(prose) if not re.match(r"^[a-z][a-z0-9+.-]*:", t)]


def broken_links(page: Path) -> list[str]:
    """Each relative link of ``page`` whose file or anchor does not exist, with the reason."""
    bad = []
    for target in relative_links(page.read_text(encoding="utf-8")):
        path_part, _, anchor = target.partition("#")
        dest = (page.parent / path_part).resolve() if path_part else page
        if not dest.exists():
            bad.append(f"{target}: no such file {dest}")
        elif anchor and dest.suffix == ".md" and anchor not in anchors(dest.read_text(encoding="utf-8")):
            bad.append(f"{target}: no heading or <a id> with anchor #{anchor} in {dest.name}")
    return bad
