"""Copying ``/logs`` out of a trial container: streamed, per-entry checks, every file capped.

Why lenient where ``archives.extract_checked`` is strict: the agent owns ``/logs/agent`` (and a
process it left running could write into ``/logs/verifier``), and nothing an agent does may make
its trial invalid. So a hostile or odd entry — a symlink leaving its dir (``ln -s /app
/logs/agent/ws``), a hard link to elsewhere, a device, a FIFO — is *skipped and listed*, and the
rest of the logs, the verifier's reward included, still come out. Every file is cut at
``max_file_bytes`` (an agent that prints 1 GB leaves a bounded trial dir) and the cut is listed.
Each kept dir also has a budget of ``max_files`` entries and ``max_dir_bytes`` bytes: an agent
that writes a million small files, or a hundred capped ones, has the rest of its dir counted in
``dropped`` instead of copied, and its budget is its own, so ``verifier/`` still comes out whole.
Lists of skipped and cut entries are bounded too (``LogsOutcome.skip``), so is the record.

The archive is read as a stream (``tarfile`` mode ``r|``) straight from the Docker API: no
member is buffered whole, in memory or on disk. Each entry is checked twice before it is written:
``archives.check_member`` (stays inside its own subdir, no device) and tarfile's ``data`` filter,
which also resolves links already written on disk, so a chain of individually harmless links
cannot lead out either. Regular files are opened with ``O_NOFOLLOW`` after any old entry at the
path is removed.
"""

from __future__ import annotations

import io
import os
import posixpath
import shutil
import tarfile
from pathlib import Path
from typing import Iterator

from tasks_lib.container.archives import check_member
from tasks_lib.errors import UnsafeArchiveError
from tasks_lib.container.container_outcomes import CutLogFile, DroppedLogs, LogsOutcome, SkippedLogEntry

_COPY_CHUNK = 1024 * 1024


class _ChunkReader(io.RawIOBase):
    """A read-only file over an iterator of byte chunks (the Docker SDK's archive stream)."""

    def __init__(self, chunks: Iterator[bytes], max_bytes: int | None = None) -> None:
        self._chunks = iter(chunks)
        self._buf = b""
        self._left = max_bytes

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:  # noqa: ANN001 (a writable buffer)
        while not self._buf:
            try:
                self._buf = next(self._chunks)
            except StopIteration:
                return 0
            if self._left is not None:
                self._left -= len(self._buf)
                if self._left < 0:
                    raise _StreamCut
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


class _StreamCut(Exception):
    """The archive passed its bound: the rest is not read."""


#: entries per kept dir, and bytes per kept dir in units of the per-file cap
MAX_FILES_PER_DIR = 10_000
DIR_BUDGET_FILES = 4
#: what the whole archive may stream beyond the kept dirs' budgets (entries tbflow skips still
#: stream through: a sparse 1 TiB file anywhere in /logs took the whole download deadline)
STREAM_SLACK_BYTES = 64 * 1024 * 1024


def stream_bound(keep: tuple[str, ...], dir_bytes: int) -> int:
    """The most bytes of archive read for ``keep`` dirs of ``dir_bytes`` each (pure)."""
    return (len(keep) + 1) * dir_bytes + STREAM_SLACK_BYTES


class _Budget:
    """What one kept dir may still take; counts what it had to leave out."""

    def __init__(self, name: str, max_files: int, max_bytes: int) -> None:
        self.name, self.files, self.bytes = name, max_files, max_bytes
        self.dropped_entries = self.dropped_bytes = 0
        self.reason = ""

    def admit(self, member: tarfile.TarInfo, cap: int) -> bool:
        size = min(member.size, cap) if member.isreg() else 0
        if self.files <= 0 or size > self.bytes:
            self.dropped_entries += 1
            self.dropped_bytes += member.size if member.isreg() else 0
            self.reason = self.reason or ("more than its entry budget" if self.files <= 0
                                          else "more than its byte budget")
            return False
        self.files -= 1
        self.bytes -= size
        return True


def extract_logs(chunks: Iterator[bytes], dest: Path, top: str, keep: tuple[str, ...],
                 max_file_bytes: int, max_files: int = MAX_FILES_PER_DIR,
                 max_dir_bytes: int | None = None) -> LogsOutcome:
    """Extract ``top/<k>/...`` for ``k`` in ``keep`` as ``dest/<k>/...``; skip and list the rest.

    Entries outside the kept subdirs are ignored silently (they are not logs tbflow collects).
    """
    dir_bytes = max_dir_bytes if max_dir_bytes is not None else DIR_BUDGET_FILES * max_file_bytes
    outcome = LogsOutcome(max_file_bytes=max_file_bytes, max_files=max_files, max_dir_bytes=dir_bytes)
    budgets = {k: _Budget(k, max_files, dir_bytes) for k in keep}
    dest.mkdir(parents=True, exist_ok=True)
    bound = stream_bound(keep, dir_bytes)
    stream = io.BufferedReader(_ChunkReader(chunks, bound), buffer_size=_COPY_CHUNK)
    try:
        _extract_members(stream, dest, top, keep, max_file_bytes, budgets, outcome)
    except _StreamCut:  # what came before stays; the caller's stream is shut (archive_fetch)
        outcome.dropped.append(DroppedLogs(dir=top, reason=f"the archive of /{top} passed {bound} bytes (a file "
                                                           "of any size streams through it whole); the rest was not read"))
    for b in budgets.values():
        if b.dropped_entries:
            outcome.dropped.append(DroppedLogs(dir=b.name, entries=b.dropped_entries, bytes=b.dropped_bytes,
                                               reason=f"{b.name}/ held {b.reason} ({max_files} entries, "
                                                      f"{dir_bytes} bytes)"))
    return outcome


def _extract_members(stream, dest: Path, top: str, keep: tuple[str, ...], max_file_bytes: int,  # noqa: ANN001
                     budgets: dict[str, "_Budget"], outcome: LogsOutcome) -> None:
    with tarfile.open(fileobj=stream, mode="r|") as tar:
        for member in tar:
            parts = posixpath.normpath(member.name).split("/")
            if len(parts) < 2 or parts[0] != top or parts[1] not in keep:
                continue
            subdir = dest / parts[1]
            if len(parts) == 2:
                subdir.mkdir(exist_ok=True)
                continue
            rel, inner = "/".join(parts[1:]), "/".join(parts[2:])
            try:
                check_member(member, f"{top}/{parts[1]}")
                # filtered against its own subdir: realpath there follows links already written,
                # so agent/ can never lead into verifier/ or to the trial record beside them
                local = member.replace(name=inner, linkname=_strip(member, f"{top}/{parts[1]}"), deep=False)
                local = tarfile.data_filter(local, os.path.realpath(subdir))
            except (UnsafeArchiveError, tarfile.FilterError) as exc:
                outcome.skip(SkippedLogEntry(path=rel, reason=_why(member, exc)))
                continue
            if not budgets[parts[1]].admit(member, max_file_bytes):
                continue
            problem = _write(tar, member, local, subdir, max_file_bytes, outcome, rel)
            if problem:
                outcome.skip(SkippedLogEntry(path=rel, reason=problem))


def _strip(member: tarfile.TarInfo, prefix: str) -> str:
    """A hard link's target is archive-relative (``logs/agent/x``); a symlink's is left alone."""
    if member.islnk() and member.linkname.startswith(prefix + "/"):
        return member.linkname[len(prefix) + 1:]
    return member.linkname


def _why(member: tarfile.TarInfo, exc: Exception) -> str:
    if member.issym():
        return f"symlink to {member.linkname!r} leaves its log dir"
    if member.islnk():
        return f"hard link to {member.linkname!r} leaves its log dir"
    if member.isdev() or member.isfifo():
        return "a device or FIFO, not a log file"
    return getattr(exc, "message", None) or str(exc)


def _write(tar: tarfile.TarFile, member: tarfile.TarInfo, local: tarfile.TarInfo, root: Path,
           cap: int, outcome: LogsOutcome, rel: str) -> str | None:
    """Write one checked entry under ``root`` (its subdir); a reason when it could not be written."""
    root.mkdir(exist_ok=True)
    path = root / local.name
    try:
        if local.isdir():
            if path.is_symlink() or (path.exists() and not path.is_dir()):
                return "a directory where another entry already is"
            path.mkdir(parents=True, exist_ok=True)
            return None
        path.parent.mkdir(parents=True, exist_ok=True)
        if path.is_symlink() or path.is_file():
            path.unlink()
        elif path.exists():
            return "an entry where a directory already is"
        if local.issym():
            os.symlink(local.linkname, path)
        elif local.islnk():
            target = root / local.linkname
            if not target.is_file() or target.is_symlink():
                return f"hard link to {member.linkname!r}, which is not a file that was copied"
            os.link(target, path)
        elif local.isreg():
            _copy_capped(tar, member, path, local.mode, cap, outcome, rel)
        else:
            return "not a regular file, directory or link"
    except OSError as exc:
        return f"could not be written: {exc.strerror or exc}"
    return None


def _copy_capped(tar: tarfile.TarFile, member: tarfile.TarInfo, path: Path, mode: int | None, cap: int,
                 outcome: LogsOutcome, rel: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    src = tar.extractfile(member)
    with os.fdopen(fd, "wb") as out:
        if src is not None:
            shutil.copyfileobj(_Limited(src, cap), out, _COPY_CHUNK)
    if mode is not None:
        os.chmod(path, mode & 0o755)
    if member.size > cap:
        outcome.note_cut(CutLogFile(path=rel, size_bytes=member.size, kept_bytes=cap))


class _Limited(io.RawIOBase):
    """The first ``limit`` bytes of a file (tarfile skips the rest of the member by itself)."""

    def __init__(self, src, limit: int) -> None:  # noqa: ANN001
        self._src, self._left = src, limit

    def readable(self) -> bool:
        return True

    def read(self, n: int = -1) -> bytes:
        if self._left <= 0:
            return b""
        n = self._left if n is None or n < 0 else min(n, self._left)
        data = self._src.read(n)
        self._left -= len(data)
        return data
