"""The judge's verifier report (judge/verify.c), read from its channel into one typed object.

Only a *complete* run counts (``ToolRun.complete``: a ``hello`` first, an ``end`` last, exit code 0
as Docker reports it). No process in the container can write into that channel, so a run that
is not complete means the judge was stopped, killed or never started: the caller decides whose
doing that was from evidence outside the container (docs/judge.md).
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tasks_lib.container.judge.judge_channel import Channel
from tasks_lib.container.sandbox import parse_processes
from tasks_lib.container.container_outcomes import ProcessInfo
from tasks_lib.text_clean import ContainerText

REWARD_FILES = ("reward.txt", "reward.json")
#: statfs f_type values (linux/magic.h) the disk rules tell apart
FS_TYPES = {0x794C7630: "overlay", 0x01021994: "tmpfs", 0xEF53: "ext4", 0x58465342: "xfs", 0x9123683E: "btrfs"}
#: the judge's own caps (judge/judge.h STUCK_CAP, STUCK_FD_CAP); more is never read
STUCK_CAP = 64
STUCK_FD_CAP = 4


class ReportedFile(BaseModel):
    """A reward file as the judge read it: its size and (up to the cap) its bytes."""

    size: int
    data: bytes

    @property
    def complete(self) -> bool:
        return len(self.data) == self.size


class StuckProcess(BaseModel):
    """A process of test.sh's session (or a descendant) at the verifier timeout, before the kill."""

    pid: int
    #: /proc state letter: ``T``/``t`` means it was stopped (by a signal or a tracer), ``D`` an
    #: uninterruptible wait, ``S`` an ordinary sleep
    state: str
    #: the kernel function it waits in (/proc/PID/wchan; ``0`` or ``?`` when not told)
    wchan: ContainerText
    exe: ContainerText
    #: FIFOs with a path it holds open (e.g. ``/app/input``): what a blocked read or write waits on
    fifo_paths: list[ContainerText] = Field(default_factory=list)


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
    #: OOM kills in the container's memory cgroup while test.sh ran (None: the cgroup's count
    #: could not be read), to tell a SIGKILL of the kernel's from one of a process's
    oom_kills: int | None = None
    timed_out: bool = False
    stdout_size: int | None = None
    watch: dict[str, int] = Field(default_factory=dict)
    disks: list[Disk] = Field(default_factory=list)
    failure: str | None = None
    no_bash: str | None = None
    timing: dict[str, int] = Field(default_factory=dict)
    #: entries the judge counted but did not list ("more N TAG"): ``pre``/``file`` reward.* entries
    #: beyond its cap, ``killed``, ``stuck`` processes beyond theirs
    omitted: dict[str, int] = Field(default_factory=dict)
    #: at the verifier timeout, what test.sh's processes were doing (at most ``STUCK_CAP``)
    stuck: list[StuckProcess] = Field(default_factory=list)
    #: CPU seconds the processes the agent left ("ran_next_to") used while test.sh ran (until
    #: its exit or the timeout); None when the judge did not say
    agent_cpu_sec: float | None = None
    #: bytes every process but the judge's and test.sh's wrote to storage from the judge's start to
    #: test.sh's end (None: not measured), and that start (realtime ns): test.sh had not run before
    agent_write_bytes: int | None = None
    marked_ns: int | None = None
    #: when that count was taken (the kernel's coarse realtime clock, as file ctimes): a file
    #: changed at or after it is no write of test.sh's, which had ended
    counted_ns: int | None = None
    #: what the agent left where a fresh entry had to go (e.g. a huge tree in /logs/verifier),
    #: set aside and not wholly removed within the judge's budget: where it is now
    trash: list[str] = Field(default_factory=list)

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


def _text(data: bytes) -> str:
    return data.decode("utf-8", errors="backslashreplace")


def _stuck(ch: Channel) -> list[StuckProcess]:
    """``stuck PID STATE WCHAN EXE`` records, each followed by its ``stuckfd PID PATH`` ones."""
    out: dict[int, StuckProcess] = {}
    for data in ch.all("stuck"):
        parts = data.split(b" ", 3)
        if len(out) >= STUCK_CAP or len(parts) < 4 or not parts[0].isdigit() or len(parts[1]) != 1:
            continue
        out[int(parts[0])] = StuckProcess(pid=int(parts[0]), state=_text(parts[1]), wchan=_text(parts[2][:64]),
                                          exe=_text(parts[3][:512]))
    for data in ch.all("stuckfd"):
        pid, _, path = data.partition(b" ")
        proc = out.get(int(pid)) if pid.isdigit() else None
        if proc is not None and len(proc.fifo_paths) < STUCK_FD_CAP:
            proc.fifo_paths.append(_text(path[:512]))
    return list(out.values())


def _cpu(record: bytes | None) -> float | None:
    """``agentcpu START_TICKS END_TICKS HZ`` as seconds."""
    parts = (record or b"").split()
    if len(parts) != 3 or not all(p.isdigit() for p in parts) or int(parts[2]) == 0:
        return None
    return max(0, int(parts[1]) - int(parts[0])) / int(parts[2])


def parse_report(ch: Channel) -> JudgeReport:
    r = JudgeReport(started=ch.first("hello") is not None)
    r.ran_next_to = parse_processes(ch.all("proc"))
    for m in ch.all("more"):
        count, _, what = m.decode("ascii", "replace").partition(" ")
        if count.isdigit():
            r.omitted[what or "proc"] = r.omitted.get(what or "proc", 0) + int(count)
    r.more_processes = r.omitted.get("proc", 0)
    r.notes = ch.text("note")
    for tag, target in (("pre", r.prewritten), ("file", r.files)):
        for data in ch.all(tag):
            parsed = _file(data)
            if parsed:
                target[parsed[0]] = parsed[1]
    r.pre_types, r.file_types = _types(ch.text("pretype")), _types(ch.text("ftype"))
    r.exit_code, r.signal = _int(ch.first("exit")), _int(ch.first("signal"))
    ooms = _int(ch.first("oomkills"))
    r.oom_kills = ooms if ooms is not None and ooms >= 0 else None
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
    r.stuck = _stuck(ch)
    r.agent_cpu_sec = _cpu(ch.first("agentcpu"))
    io = (ch.first("agentio") or b"").split()
    if len(io) in (2, 3) and all(p.isdigit() for p in io):
        r.agent_write_bytes, r.marked_ns = int(io[0]), int(io[1])
        r.counted_ns = int(io[2]) if len(io) == 3 else None
    r.trash = ch.text("trash")[:16]
    nobash = ch.text("nobash")
    r.no_bash = nobash[0] if nobash else None
    return r
