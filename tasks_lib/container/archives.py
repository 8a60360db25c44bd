"""Tar archives in and out of containers, checked on the way out.

Files move with the Docker SDK's archive calls (``put_archive``/``get_archive``), never bind
mounts, so a trial works the same against a remote engine. What comes out of a container is
untrusted — the agent controls it — so every member is checked before anything is written on
the host: no absolute path, no ``..``, no link that points outside the destination, no device.
"""

from __future__ import annotations

import hashlib
import io
import os
import posixpath
import tarfile
import tempfile
from contextlib import contextmanager
from pathlib import Path
from typing import Iterable, Iterator

from tasks_lib.errors import UnsafeArchiveError

#: Extensions of text scripts whose CRLF line ends break ``bash`` (``$'\r': command not found``).
_SCRIPT_SUFFIXES = {".sh", ".bash", ".py"}


def _is_text_script(path: Path, data: bytes) -> bool:
    if b"\0" in data:
        return False
    return path.suffix in _SCRIPT_SUFFIXES or data.startswith(b"#!")


def script_bytes(path: Path, data: bytes) -> bytes:
    """``data`` with CRLF line ends made LF when ``path`` is a text script, else unchanged."""
    return data.replace(b"\r\n", b"\n") if _is_text_script(path, data) else data


def _add_bytes(tar: tarfile.TarFile, name: str, data: bytes, mode: int) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    info.mode = mode
    tar.addfile(info, io.BytesIO(data))


def _add_dir(tar: tarfile.TarFile, name: str, mode: int = 0o755) -> None:
    info = tarfile.TarInfo(name)
    info.type = tarfile.DIRTYPE
    info.mode = mode
    tar.addfile(info)


def pack(entries: Iterable[tuple[Path, str]], dirs: Iterable[tuple[str, int]] = (),
         normalise_crlf: bool = False) -> bytes:
    """Tar host directories into container paths, in memory (for small uploads)."""
    buf = io.BytesIO()
    pack_into(buf, entries, dirs, normalise_crlf)
    return buf.getvalue()


def pack_into(fileobj, entries: Iterable[tuple[Path, str]], dirs: Iterable[tuple[str, int]] = (),
              normalise_crlf: bool = False) -> None:
    """Tar host directories into container paths, for ``put_archive(path="/")``.

    ``entries`` are (host dir, absolute container dir) pairs; ``dirs`` are extra empty
    directories (path, mode) to create. Members are owned by root; file modes are kept so an
    executable ``solve.sh`` stays executable. With ``normalise_crlf`` text scripts get LF ends.
    Files are streamed into ``fileobj`` one by one, so a 400 MB harness bundle does not have to
    fit in memory.
    """
    with tarfile.open(fileobj=fileobj, mode="w") as tar:
        for path, mode in dirs:
            _add_dir(tar, path.lstrip("/"), mode)
        for source, target in entries:
            root = target.strip("/")
            _add_dir(tar, root)
            for item in sorted(source.rglob("*")):
                name = f"{root}/{item.relative_to(source).as_posix()}"
                if item.is_symlink():
                    info = tarfile.TarInfo(name)
                    info.type = tarfile.SYMTYPE
                    info.linkname = str(item.readlink())
                    tar.addfile(info)
                elif item.is_dir():
                    _add_dir(tar, name, item.stat().st_mode & 0o7777)
                elif item.is_file():
                    mode = item.stat().st_mode & 0o7777
                    if normalise_crlf and item.stat().st_size < 16 * 1024 * 1024:
                        _add_bytes(tar, name, script_bytes(item, item.read_bytes()), mode)
                    else:
                        info = tar.gettarinfo(str(item), arcname=name)
                        info.uid = info.gid = 0
                        info.uname = info.gname = "root"
                        info.mode = mode
                        with open(item, "rb") as fh:
                            tar.addfile(info, fh)


def bundle_tar(source: Path, target: str) -> Path:
    """A tar of an immutable bundle directory (a harness cache entry), built once beside it.

    Bundles never change once published, so their upload tar is made on the first trial and
    reused by every later one instead of re-reading hundreds of MB per trial. Written to a temp
    name and renamed, so concurrent trials never see half a tar.
    """
    digest = hashlib.sha256(f"{source.resolve()}\0{target}".encode()).hexdigest()[:16]
    out = source.parent / f".{source.name}.upload-{digest}.tar"
    if out.is_file():
        return out
    fd, tmp = tempfile.mkstemp(prefix=out.name, dir=source.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            pack_into(fh, [(source, target)])
        os.replace(tmp, out)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return out


def check_member(member: tarfile.TarInfo, dest_root: str) -> None:
    """Raise ``UnsafeArchiveError`` when ``member`` would land outside ``dest_root``.

    ``dest_root`` is the archive's top directory name (``get_archive`` of ``/logs/agent`` yields
    members under ``agent/``); every member must stay under it once normalised.
    """
    name = member.name
    if name.startswith("/") or (len(name) > 1 and name[1] == ":"):
        raise UnsafeArchiveError("download", f"archive member has an absolute path: {name!r}")
    parts = name.split("/")
    if ".." in parts:
        raise UnsafeArchiveError("download", f"archive member escapes with '..': {name!r}")
    norm = posixpath.normpath(name)
    if norm != dest_root and not norm.startswith(dest_root + "/"):
        raise UnsafeArchiveError("download", f"archive member outside {dest_root}/: {name!r}")
    if member.isdev() or member.isfifo():
        raise UnsafeArchiveError("download", f"archive member is a device or fifo: {name!r}")
    if member.issym() or member.islnk():
        link = member.linkname
        if member.issym():
            target = posixpath.normpath(posixpath.join(posixpath.dirname(norm), link))
        else:
            target = posixpath.normpath(link)
        if link.startswith("/") or target == ".." or target.startswith("../") or not (
            target == dest_root or target.startswith(dest_root + "/")
        ):
            raise UnsafeArchiveError("download", f"archive link {name!r} -> {link!r} points outside {dest_root}/")


@contextmanager
def spooled(chunks: Iterator[bytes]):
    """The whole stream in a seekable buffer (memory up to 32 MiB, then disk): tar needs to read
    every member header before anything is extracted."""
    with tempfile.SpooledTemporaryFile(max_size=32 * 1024 * 1024) as buf:
        for chunk in chunks:
            buf.write(chunk)
        buf.seek(0)
        yield buf


def extract_checked(chunks: Iterator[bytes], dest: Path, dest_root: str) -> list[str]:
    """Extract a ``get_archive`` stream into ``dest`` after checking every member.

    The whole archive is checked before the first file is written, so a hostile member leaves
    nothing half-extracted. Returns the member names.
    """
    with spooled(chunks) as buf:
        return _extract(buf, dest, dest_root)


def _extract(buf, dest: Path, dest_root: str) -> list[str]:
    with tarfile.open(fileobj=buf, mode="r:") as tar:
        members = tar.getmembers()
        for m in members:
            check_member(m, dest_root)
        dest.mkdir(parents=True, exist_ok=True)
        # The 'data' filter is a second line of defence behind our own check.
        tar.extractall(dest, members=members, filter="data")
    return [m.name for m in members]
