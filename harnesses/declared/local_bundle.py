"""A declared harness's bundle from a local directory, tarball or wheel, checked against its sha256.

Why pinned like an npm package: the bundle is what runs in every trial; a file edited between two
runs of one job would compare two agents under one name. A tarball or a wheel is pinned by the
sha256 of the file; a directory by ``tree_sha256``: sha256 over ``<path>\\0<sha256 of the
file>\\0<exec bit>\\n`` for every file in path order (symlinks and special files are refused: they
could point outside the bundle). A mismatch names the digest found, so the pin of a new version
is copied from the error.

Unpacking refuses members that would land outside the bundle (absolute paths, ``..``) and, in a
tarball, any link or special file: stricter than ``tasks_lib.container.archives.check_member``,
which admits links inside one top directory (a local tarball need not have one), and the same
for zip files, which ``tarfile``'s ``data`` filter does not cover.
"""

from __future__ import annotations

import hashlib
import shutil
import tarfile
import zipfile
from pathlib import Path, PurePosixPath

from harnesses.bundles.npm_bundle import PackageFetchError, UnsafePackageError
from tasks_lib.file_sha256 import sha256_file


def tree_sha256(root: Path) -> str:
    """The pinned digest of a bundle directory (see the module docstring)."""
    lines = []
    for p in sorted(root.rglob("*"), key=lambda q: q.relative_to(root).as_posix()):
        rel = p.relative_to(root).as_posix()
        if p.is_symlink() or not (p.is_file() or p.is_dir()):
            raise UnsafePackageError(f"bundle dir {root}: {rel} is a link or a special file")
        if p.is_file():
            lines.append(f"{rel}\0{sha256_file(p)}\0{1 if p.stat().st_mode & 0o111 else 0}\n")
    return hashlib.sha256("".join(lines).encode()).hexdigest()


def local_digest(kind: str, path: Path) -> str:
    """The sha256 a ``dir``, ``tarball`` or ``wheel`` bundle is pinned by."""
    if kind == "dir":
        if not path.is_dir():
            raise PackageFetchError(f"bundle dir {path} is not a directory")
        return tree_sha256(path)
    if not path.is_file():
        raise PackageFetchError(f"bundle {kind} {path} is not a file")
    return sha256_file(path)


def kind_of(path: Path) -> str:
    """A bundle path's kind by what it is: a directory, a wheel (``.whl``), else a tarball."""
    return "dir" if path.is_dir() else "wheel" if path.suffix == ".whl" else "tarball"


def copy_local(kind: str, source: Path, dest: Path) -> int:
    """Put the bundle's files into ``dest`` (copied, or unpacked); returns how many files."""
    if kind == "dir":
        shutil.copytree(source, dest, symlinks=False)
    elif kind == "tarball":
        _untar(source, dest)
    else:
        _unzip(source, dest)
    return sum(1 for p in dest.rglob("*") if p.is_file())


def _safe(name: str, what: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if path.is_absolute() or ".." in path.parts:
        raise UnsafePackageError(f"{what}: member {name!r} would land outside the bundle")
    return path


def _untar(source: Path, dest: Path) -> None:
    try:
        with tarfile.open(source) as tar:
            members = tar.getmembers()
            for m in members:
                _safe(m.name, source.name)
                if not (m.isfile() or m.isdir()):
                    raise UnsafePackageError(f"{source.name}: member {m.name!r} is a link or a special file")
            tar.extractall(dest, members=members, filter="data")
    except (tarfile.TarError, OSError, EOFError) as exc:
        raise UnsafePackageError(f"{source.name}: cannot unpack: {exc}") from exc


def _unzip(source: Path, dest: Path) -> None:
    try:
        with zipfile.ZipFile(source) as zf:
            for info in zf.infolist():
                _safe(info.filename, source.name)
            zf.extractall(dest)
            for info in zf.infolist():  # zip keeps the unix mode in the high bits: restore exec bits
                mode = (info.external_attr >> 16) & 0o777
                if mode & 0o111 and not info.is_dir():
                    (dest / info.filename).chmod(mode | 0o444)
    except (zipfile.BadZipFile, OSError) as exc:
        raise UnsafePackageError(f"{source.name}: cannot unpack: {exc}") from exc
