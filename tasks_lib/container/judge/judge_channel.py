"""The judge's channel, parsed strictly: records ``TAG LEN\\n`` + LEN bytes + ``\\n``, nothing else.

No process in the container can write into this channel (judge/judge.h says why), so anything
that is not a well-formed record of a known tag means the judge was cut off mid-write or did not
run at all; the caller treats such a channel as incomplete, never as partly true. Framing is by
length, so no byte a record carries (a ``\\r`` or ``\\n`` in a command line, a reward file's
bytes) can start another record.
"""

from __future__ import annotations

from dataclasses import dataclass, field

TAGS = frozenset({"hello", "launch", "proc", "left", "killed", "more", "note", "note-detail", "pre", "pretype",
                  "file", "ftype", "exit", "signal", "timeout",
                  "stdout", "watch", "timing", "disk", "nobash", "fail", "end",
                  "stuck", "stuckfd", "agentcpu", "agentio", "oomkills", "trash"})
MAX_HEADER = 32


@dataclass
class Channel:
    records: list[tuple[str, bytes]] = field(default_factory=list)
    #: why the bytes were not a complete, well-formed report (None when they were)
    problem: str | None = None

    @property
    def started(self) -> bool:
        return bool(self.records) and self.records[0][0] in ("hello", "launch")

    @property
    def ended(self) -> bool:
        return self.problem is None and bool(self.records) and self.records[-1][0] == "end"

    def all(self, tag: str) -> list[bytes]:
        return [data for t, data in self.records if t == tag]

    def first(self, tag: str) -> bytes | None:
        return next((data for t, data in self.records if t == tag), None)

    def text(self, tag: str) -> list[str]:
        return [d.decode("utf-8", errors="backslashreplace") for d in self.all(tag)]


def next_record(raw: bytes | bytearray, pos: int) -> tuple[str, int] | None:
    """The tag of the whole record at ``pos`` and where the next one starts; None while it is
    incomplete. A malformed header reads as the tag ``""`` (nothing after it is a record)."""
    nl = raw.find(b"\n", pos, pos + MAX_HEADER)
    if nl < 0:
        return ("", pos) if len(raw) - pos >= MAX_HEADER else None
    tag, _, size = bytes(raw[pos:nl]).decode("ascii", errors="replace").partition(" ")
    if tag not in TAGS or not size.isdigit():
        return "", pos
    end = nl + 1 + int(size)
    return (tag, end + 1) if len(raw) > end else None


def parse_channel(raw: bytes) -> Channel:
    ch = Channel()
    pos = 0
    while pos < len(raw):
        nl = raw.find(b"\n", pos, pos + MAX_HEADER)
        if nl < 0:
            ch.problem = f"the record at byte {pos} is cut off in its header"
            return ch
        tag, _, size = raw[pos:nl].decode("ascii", errors="replace").partition(" ")
        if tag not in TAGS or not size.isdigit():
            ch.problem = f"malformed record header at byte {pos}: {raw[pos:nl][:MAX_HEADER]!r}"
            return ch
        start, end = nl + 1, nl + 1 + int(size)
        if raw[end:end + 1] != b"\n":
            ch.problem = f"record {tag} at byte {pos} is cut off"
            return ch
        ch.records.append((tag, raw[start:end]))
        pos = end + 1
    if not ch.records:
        ch.problem = "the judge wrote nothing"
    return ch
