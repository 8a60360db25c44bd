"""Copy an artifact out of a container onto the host, and artifacts from the host into a container.

Out: what a path holds is the agent's doing, so the copy is cut at a number of bytes and a
deadline (``archive_fetch``), and every member is checked before anything is written: members
that would land outside the artifact, devices, fifos and links that leave it are *skipped and
listed* (the rest of an artifact stays useful evidence), and what is kept is extracted with
tarfile's ``data`` filter (no setuid bits, no ownership from the archive).

In: the host copies go back into a (separate verifier's) container at their container paths,
owned by root with permission bits only, so what the verifier sees is exactly what was recorded.
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tarfile
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from tasks_lib.container.archive_fetch import counted, fetch_archive
from tasks_lib.container.archives import check_member, spooled
from tasks_lib.errors import UnsafeArchiveError


@dataclass
class CopiedOut:
    """What came out of one container path (``found`` False: the path is not there)."""

    found: bool
    is_dir: bool = False
    empty: bool = False
    #: member names left out as unsafe (raw: the caller escapes them for the record)
    skipped: list[str] = field(default_factory=list)


def copy_out(container: str, source: str, dest: Path, exclude: Callable[[str], bool], max_bytes: int,
             timeout_sec: float, stage: str) -> CopiedOut:
    """Copy container ``source`` to host ``dest`` (a file or a directory, created whole or not at
    all). ``exclude(path below the top)`` leaves members out, as tar's ``--exclude`` would."""
    top = posixpath.basename(source.rstrip("/")) or "root"
    staging = Path(tempfile.mkdtemp(prefix=".artifact-", dir=dest.parent if dest.parent.is_dir() else None))
    try:
        got = fetch_archive(container, source, stage, lambda chunks: _extract(
            counted(chunks, max_bytes, source, stage), staging, top, exclude), timeout_sec)
        if got is None:
            return CopiedOut(found=False)
        copied = staging / top
        if not copied.exists() and not copied.is_symlink():
            return CopiedOut(found=True, empty=True, skipped=got)
        is_dir = copied.is_dir() and not copied.is_symlink()
        dest.parent.mkdir(parents=True, exist_ok=True)
        os.replace(copied, dest)
        return CopiedOut(found=True, is_dir=is_dir, empty=is_dir and not any(dest.iterdir()), skipped=got)
    finally:
        shutil.rmtree(staging, ignore_errors=True)


def _extract(chunks: Iterator[bytes], staging: Path, top: str, exclude: Callable[[str], bool]) -> list[str]:
    """Extract the safe, not excluded members under ``staging``; return the unsafe ones' names."""
    skipped: list[str] = []
    with spooled(chunks) as buf:
        with tarfile.open(fileobj=buf, mode="r:") as tar:
            for member in tar:
                relative = posixpath.normpath(member.name)[len(top) + 1:]
                try:
                    check_member(member, top)
                except UnsafeArchiveError:
                    skipped.append(member.name)
                    continue
                if relative and exclude(relative):
                    continue
                try:
                    tar.extract(member, staging, filter="data")
                except (tarfile.FilterError, OSError, KeyError):  # a link to a member left out, a bad mode
                    skipped.append(member.name)
    return skipped


def pack_artifacts(entries: list[tuple[Path, str]], fileobj) -> None:
    """Tar host copies into their container paths (``put_archive`` at ``/``): owned by root,
    permission bits only; links are kept as they were recorded (already checked to stay inside)."""

    def plain(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
        if not (info.isfile() or info.isdir() or info.issym()):
            return None
        info.uid = info.gid = 0
        info.uname = info.gname = "root"
        info.mode &= 0o777
        return info

    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for host_path, container_path in entries:
            tar.add(str(host_path), arcname=container_path.strip("/"), recursive=True, filter=plain)
