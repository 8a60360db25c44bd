"""Which files of the writable layer the verifier used, read from their access times, and when
those times cannot tell (issue 38: evidence the agent can hide never vouches).

Before the verifier the host sets the atime of the files that matter to 0 and keeps a ``Stamp``
of each (ctime, mtime, size, inode, the moment of the reset); any read, ``exec`` or ``mmap`` after
that sets the atime to the current time, ``relatime`` included (an atime older than the mtime is
always updated). The agent is root in the same file system, though, and can hide a read:

* set the atime back (``touch -a -d @0``, a daemon doing it right after the read, a ``.pth``
  that ``utime``s itself from inside test.sh's Python): every ``utime`` moves the ctime, and
  nothing else moves a ctime without writing bytes (a read does not);
* mark the file no-atime (``chattr +A``: the kernel then never updates its atime);
* mount the container's root ``noatime`` (not possible without ``CAP_SYS_ADMIN``, but checked:
  an engine or task could do it), or put the file where the host file system is mounted so;
* delete the file or write it again after the read (then whose bytes were read is lost).

Each of these makes ``judge_use`` answer *hidden*, never "not used": the caller counts such a
file as possibly used, which fails the default gate for a runner file (``runner_use``).
"""

from __future__ import annotations

import fcntl
import os
import struct
import time
from dataclasses import dataclass
from typing import Iterable

#: ``FS_IOC_GETFLAGS`` (linux/fs.h) and the no-atime inode flag ``chattr +A`` sets
FS_IOC_GETFLAGS = 0x80086601
FS_NOATIME_FL = 0x00000080
#: how far the kernel's coarse clock (which stamps atimes) can lag ``time.time_ns()``: an atime
#: this much below the reset is not a read after it, but one set there
CLOCK_SLACK_NS = 1_000_000_000


@dataclass(frozen=True)
class Stamp:
    """A file right after tbflow reset its atime."""

    ctime_ns: int
    mtime_ns: int = 0
    size: int = 0
    ino: int = 0
    #: ``time.time_ns()`` just before the reset
    at_ns: int = 0


@dataclass(frozen=True)
class Seen:
    """A file as it is after the verifier (None: it is gone)."""

    atime_ns: int
    ctime_ns: int
    mtime_ns: int
    size: int
    ino: int
    no_atime: bool = False


@dataclass(frozen=True)
class Use:
    """What became of one file after the reset: read/executed, or changed; ``hidden`` says why its
    times cannot tell whether it was used (then ``used`` means nothing)."""

    used: bool
    changed_after: bool
    gone: bool = False
    hidden: str | None = None


def judge_use(stamp: Stamp, seen: Seen | None) -> Use:
    """Pure: whether the file was used since ``stamp``, from what it is now. A read never moves
    the ctime; a write moves ctime and mtime; a ``utime`` moves the ctime and whatever it sets."""
    if seen is None:
        return Use(used=False, changed_after=True, gone=True,
                   hidden="deleted while the verifier ran: a read before that is not known")
    changed = seen.ctime_ns != stamp.ctime_ns
    used = seen.atime_ns > 0
    if seen.no_atime:
        return Use(used, changed, hidden="it carries the no-atime attribute (chattr +A): reads leave no trace")
    if 0 < seen.atime_ns < stamp.at_ns - CLOCK_SLACK_NS:
        return Use(used, changed, hidden="its atime was set below tbflow's reset")
    if changed and (seen.mtime_ns, seen.size, seen.ino) == (stamp.mtime_ns, stamp.size, stamp.ino):
        return Use(used, changed, hidden="its metadata changed while the verifier ran with no bytes written "
                                         "(a utime, chmod or chattr can hide a read)")
    if changed:
        return Use(used, changed, hidden="written again while the verifier ran: a read before that is not known")
    return Use(used, changed)


def reset_atimes(hosts: Iterable[tuple[str, str]]) -> dict[str, Stamp]:
    """Set the atime of each ``(path, host path)`` to 0 (mtime kept). Returns each one's stamp right
    after: per file, not one clock reading, because the kernel stamps ctimes with a coarse clock."""
    stamped: dict[str, Stamp] = {}
    for path, host in hosts:
        try:
            at = time.time_ns()
            os.utime(host, ns=(0, os.lstat(host).st_mtime_ns), follow_symlinks=False)
            st = os.lstat(host)
        except OSError:
            continue
        stamped[path] = Stamp(st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_ino, at)
    return stamped


def seen_now(host: str) -> Seen | None:
    try:
        st = os.lstat(host)
    except OSError:
        return None
    return Seen(st.st_atime_ns, st.st_ctime_ns, st.st_mtime_ns, st.st_size, st.st_ino, no_atime_flag(host))


def no_atime_flag(host: str) -> bool:
    """Whether the inode carries ``FS_NOATIME_FL`` (read on the host, never following a link).
    A file system without inode flags has none to set."""
    try:
        fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOATIME)
    except OSError:
        return False
    try:
        raw = fcntl.ioctl(fd, FS_IOC_GETFLAGS, struct.pack("l", 0))
        return bool(struct.unpack("l", raw)[0] & FS_NOATIME_FL)
    except OSError:
        return False
    finally:
        os.close(fd)


def root_mount_problem(pid: int | None) -> str | None:
    """Why atimes of the container's root cannot be trusted, read from its mount table on the host
    (``/proc/PID/mountinfo`` of its main process): a root mounted ``noatime``; None when it records
    them or the table cannot be read (the host file system's own flags are checked too)."""
    if not pid:
        return None
    try:
        with open(f"/proc/{pid}/mountinfo", encoding="utf-8", errors="replace") as fh:
            lines = fh.read(1 << 20).splitlines()
    except OSError:
        return None
    return mount_problem(lines)


def mount_problem(lines: list[str]) -> str | None:
    """Pure: the problem with the root mount of a ``mountinfo`` table (per-mount options are field
    6, the file system's own after the ``-`` separator)."""
    for line in lines:
        fields = line.split(" ")
        if len(fields) < 6 or fields[4] != "/":
            continue
        sep = fields.index("-") if "-" in fields else len(fields)
        opts = fields[5].split(",") + (fields[sep + 3].split(",") if len(fields) > sep + 3 else [])
        if "noatime" in opts:
            return "the container's root is mounted noatime: which files were used is unknown"
    return None


def uses_since(entries: Iterable[tuple[str, str]], stamped: dict[str, Stamp]) -> dict[str, Use]:
    """For each ``(path, host path)`` whose atime was reset: was it used, or changed, since."""
    return {path: judge_use(stamped[path], seen_now(host)) for path, host in entries if path in stamped}
