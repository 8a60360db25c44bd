"""The judge's verifier report (judge/verify.c), read from its channel into one typed object.

Only a *complete* run counts (``ToolRun.complete``: a ``hello`` first, an ``end`` last, exit code 0
as Docker reports it). No process in the container can write into that channel, so a run that
is not complete means the judge was stopped, killed or never started: the caller decides whose
doing that was from evidence outside the container (README "The judge").
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tasks_lib.container.judge_channel import Channel
from tasks_lib.container.sandbox import parse_processes
from tasks_lib.container.container_outcomes import ProcessInfo

REWARD_FILES = ("reward.txt", "reward.json")
#: statfs f_type values (linux/magic.h) the disk rules tell apart
FS_TYPES = {0x794C7630: "overlay", 0x01021994: "tmpfs", 0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs"}


class ReportedFile(BaseModel):
    """A reward file as the judge read it: its size and (up to the cap) its bytes."""

    size: int
    data: bytes

    @property
    def complete(self) -> bool:
        return len(self.data) == self.size


class Disk(BaseModel):
    path: str
    fstype: str
    total_kb: int
    avail_kb: int

    @property
    def full(self) -> bool:
        return self.avail_kb == 0


class JudgeReport(BaseModel):
    started: bool = False
    ran_next_to: list[ProcessInfo] = Field(default_factory=list)
    more_processes: int = 0
    notes: list[str] = Field(default_factory=list)
    #: reward.* entries found before test.sh: regular files with their bytes, others by type
    prewritten: dict[str, ReportedFile] = Field(default_factory=dict)
    pre_types: dict[str, str] = Field(default_factory=dict)
    #: reward.* at test.sh's exit, read through the directory the judge made
    files: dict[str, ReportedFile] = Field(default_factory=dict)
    file_types: dict[str, str] = Field(default_factory=dict)
    exit_code: int | None = None
    signal: int | None = None
    timed_out: bool = False
    stdout_size: int | None = None
    watch: dict[str, int] = Field(default_factory=dict)
    disks: list[Disk] = Field(default_factory=list)
    failure: str | None = None
    no_bash: str | None = None
    timing: dict[str, int] = Field(default_factory=dict)

    @property
    def reward_rewrites(self) -> str | None:
        """What the watch saw happen to the reward files while test.sh ran that test.sh's own
        single write does not explain (None when nothing)."""
        w = self.watch
        seen = []
        if w.get("dir_replaced"):
            seen.append("/logs/verifier was moved or removed")
        if w.get("moved_in") or w.get("moved_out"):
            seen.append(f"a reward file was renamed in or out {w.get('moved_in', 0) + w.get('moved_out', 0)} time(s)")
        if w.get("deleted"):
            seen.append(f"a reward file was deleted {w['deleted']} time(s)")
        writes = w.get("writes_txt", 0) + w.get("writes_json", 0)
        if writes > 2:
            seen.append(f"the reward files were written {writes} times")
        if w.get("overflow"):
            seen.append("so many changes that the watch overflowed")
        return "; ".join(seen) or None


def _file(data: bytes) -> tuple[str, ReportedFile] | None:
    size, _, rest = data.partition(b" ")
    namelen, _, rest = rest.partition(b" ")
    if not (size.isdigit() and namelen.isdigit()):
        return None
    name = rest[:int(namelen)].decode("utf-8", errors="backslashreplace")
    return name, ReportedFile(size=int(size), data=rest[int(namelen):])


def _types(records: list[str]) -> dict[str, str]:
    return {name: kind for kind, _, name in (r.partition(" ") for r in records)}


def _ints(record: bytes | None) -> dict[str, int]:
    pairs = (tok.split("=", 1) for tok in (record or b"").decode("ascii", "replace").split() if "=" in tok)
    return {k: int(v) for k, v in pairs if v.isdigit()}


def _int(record: bytes | None) -> int | None:
    return int(record) if record is not None and record.lstrip(b"-").isdigit() else None


def parse_report(ch: Channel) -> JudgeReport:
    r = JudgeReport(started=ch.first("hello") is not None)
    r.ran_next_to = parse_processes(ch.all("proc"))
    r.more_processes = sum(int(m.split()[0]) for m in ch.all("more") if m.split()[:1] and m.split()[0].isdigit())
    r.notes = ch.text("note")
    for tag, target in (("pre", r.prewritten), ("file", r.files)):
        for data in ch.all(tag):
            parsed = _file(data)
            if parsed:
                target[parsed[0]] = parsed[1]
    r.pre_types, r.file_types = _types(ch.text("pretype")), _types(ch.text("ftype"))
    r.exit_code, r.signal = _int(ch.first("exit")), _int(ch.first("signal"))
    r.timed_out = ch.first("timeout") is not None
    r.stdout_size = _int(ch.first("stdout"))
    r.watch, r.timing = _ints(ch.first("watch")), _ints(ch.first("timing"))
    for line in ch.text("disk"):
        parts = line.split(" ", 3)
        if len(parts) == 4 and parts[1].isdigit() and parts[2].isdigit():
            r.disks.append(Disk(path=parts[3], fstype=FS_TYPES.get(int(parts[0], 16), parts[0]),
                                total_kb=int(parts[1]), avail_kb=int(parts[2])))
    fails = ch.text("fail")
    r.failure = "; ".join(fails) or None
    nobash = ch.text("nobash")
    r.no_bash = nobash[0] if nobash else None
    return r
