"""Formatting filters shared by the Markdown templates (report and diff).

Every piece of record text (task names, reasons, paths) goes through ``md`` or ``code`` before
it reaches Markdown: control characters, terminal escapes and bidi overrides made visible
(``tasks_lib.text_clean.visible``), newlines flattened, then HTML- and Markdown-escaped, so a log
line such as ``<details>``, ``<img src=x>``, ``[x](javascript:...)``, ``| x |`` or ``# x`` is
shown as written and cannot break or add to the page on GitHub or in the Prefect UI.
"""

from __future__ import annotations

import re
from datetime import datetime

from markupsafe import escape as _html_escape

from tasks_lib.text_clean import shorten, visible

_MD_SPECIAL = re.compile(r"([\\`*_\[\]|#~!])")


def md(value: object, limit: int | None = None) -> str:
    """Record text made inert for a Markdown table cell or paragraph; a line break shows as ↵."""
    text = visible(str(value), multiline=True).strip()
    text = re.sub(r"\s*\n+\s*", " ↵ ", text)
    if limit:
        text = shorten(text, limit)
    text = text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MD_SPECIAL.sub(r"\\\1", text)


def code(value: object) -> str:
    """A path as an inline code span (pipes escaped for tables), or plain escaped text."""
    text = visible(str(value))
    if "`" in text:
        return md(text)
    return "`" + text.replace("|", "\\|") + "`"


def html(value: object) -> str:
    """Text for inside an HTML element such as ``<summary>``."""
    return str(_html_escape(visible(str(value))))


def num(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def signed(value: float | None, digits: int = 3) -> str:
    return "n/a" if value is None else f"{value:+.{digits}f}"


def seconds(value: float) -> str:
    """A duration for people: ``42.0s``, ``3m 05s``, ``2h 07m``."""
    value = float(value)
    if value < 60:
        return f"{value:.1f}s"
    minutes, secs = divmod(int(round(value)), 60)
    if minutes < 60:
        return f"{minutes}m {secs:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def when(value: datetime | None) -> str:
    return "not finished" if value is None else value.isoformat(timespec="seconds").replace("+00:00", "Z")


FILTERS = {"md": md, "code": code, "html": html, "num": num, "signed": signed, "seconds": seconds, "when": when}
