"""The trial container's writable layer, read from the host: what the agent added, changed or
deleted, and afterwards which of those files the verifier used.

Why not ``docker diff``: the engine computes it by comparing the container's whole file system
with the image's, so it took 0.5 s on a 168 MB image and ~1 s on a 2 GB one (issue 28); it fails
outright on one path over 4096 bytes; and it says nothing about *use*. The overlay2 driver keeps
the container's changes in one directory (``GraphDriver.Data.UpperDir``), so walking it costs what
the agent changed, not what the image holds. Deleted files are whiteouts there (a 0:0 character
device), a directory that replaced an image directory is marked opaque.

Use is read from access times: before the verifier the host sets the atime of the files that
matter to 0; any read, ``exec`` or ``mmap`` (the dynamic loader, an import) after that sets it to
the current time, ``relatime`` included (an atime older than the mtime is always updated), while
looking a path up (``stat``, ``test -e``) does not. The kernel does this for every process in the
container, at no cost to the verifier. It needs the engine on this host, tbflow as root, and a
host file system and container root that record atimes (not mounted ``noatime``); without the
first two tbflow falls back to ``docker diff`` and says so in the evidence: then nothing is known
about use. What the agent can do to hide a read, and how each counts as "unknown":
``access_times``.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Iterable, Literal

from tasks_lib.container.access_times import Stamp, reset_atimes, root_mount_problem
from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.container.upper_walk import walk_upper

Change = Literal["added", "changed", "deleted"]
#: entries read from one writable layer at most: an agent can create millions of files
MAX_ENTRIES = 1_000_000
#: bytes of changed files compared with the image's, per trial: past it a file counts as changed
COMPARE_BUDGET = 512 * 1024 * 1024
_KINDS = {0: "changed", 1: "added", 2: "deleted"}
_TYPES = ((stat.S_ISREG, "file"), (stat.S_ISDIR, "dir"), (stat.S_ISLNK, "symlink"), (stat.S_ISFIFO, "fifo"),
          (stat.S_ISSOCK, "socket"), (stat.S_ISCHR, "char"), (stat.S_ISBLK, "block"))


@dataclass(frozen=True)
class Entry:
    """One path the container changed. ``host`` is where the host reads it (None from docker diff)."""

    path: str
    change: Change
    type: str = "file"
    mode: int = 0
    size: int = 0
    host: str | None = None
    #: the directory hides the image's directory of the same name (overlay "opaque")
    opaque: bool = False
    #: inode in the upper directory: a file moved in place keeps it
    ino: int = 0
    ctime_ns: int = 0


@dataclass
class LayerScan:
    """The container's changes at one moment, and how they were read."""

    entries: list[Entry] = field(default_factory=list)
    source: Literal["upperdir", "docker-diff", "none"] = "none"
    #: why the richer source (or any source) was not available: evidence, never "nothing changed"
    problem: str | None = None
    incomplete: bool = False

    def deleted_under(self, dirs: tuple[str, ...]) -> list[str]:
        return sorted(e.path for e in self.entries if e.change == "deleted" and e.path.startswith(dirs))


def _type_of(mode: int) -> str:
    return next((name for test, name in _TYPES if test(mode)), "unknown")


def _whiteout(host_path: str) -> bool:
    try:
        st = os.lstat(host_path)
    except OSError:
        return False
    return stat.S_ISCHR(st.st_mode) and st.st_rdev == 0


def _opaque(host_path: str) -> bool:
    for attr in ("trusted.overlay.opaque", "user.overlay.opaque"):
        try:
            if os.getxattr(host_path, attr, follow_symlinks=False) == b"y":
                return True
        except OSError:
            continue
    return False


class WritableLayer:
    """The upper and lower directories of one container's overlay, or why they cannot be read."""

    def __init__(self, container: str, upper: str | None, lowers: list[str], problem: str | None) -> None:
        self.container, self.upper, self.lowers, self.problem = container, upper, lowers, problem
        self._hidden: dict[tuple[str, str], bool] = {}
        self._compared = 0

    @classmethod
    def of(cls, container: str, inspect: dict) -> "WritableLayer":
        """From the container's ``docker inspect``; the directories must be readable here."""
        driver = inspect.get("GraphDriver") or {}
        data = driver.get("Data") or {}
        upper, lower = data.get("UpperDir"), data.get("LowerDir") or ""
        if driver.get("Name") != "overlay2" or not upper:
            return cls(container, None, [], f"the engine's storage driver is {driver.get('Name') or 'unknown'}, "
                                            "not overlay2 with a writable layer tbflow can read")
        if not os.access(upper, os.R_OK | os.X_OK):
            return cls(container, None, [], f"the container's writable layer ({upper}) is not readable here "
                                            "(a remote engine, or tbflow not running as root)")
        lowers = [d for d in lower.split(":") if d]
        problem = None
        if os.statvfs(upper).f_flag & os.ST_NOATIME:
            problem = f"the host file system of {upper} is mounted noatime: which files were used is unknown"
        problem = problem or root_mount_problem((inspect.get("State") or {}).get("Pid"))
        return cls(container, upper, lowers, problem)

    @property
    def atimes(self) -> bool:
        """Whether access times can tell which files the verifier used."""
        return self.upper is not None and self.problem is None

    def in_image(self, path: str) -> bool:
        """Whether the image has ``path``: in its topmost layer that says anything about it (a
        whiteout there, or a parent that one of its layers deleted or made opaque, hides what the
        layers below hold)."""
        parent = path.rsplit("/", 1)[0]
        for low in self.lowers:
            if os.path.lexists(low + path):
                return not _whiteout(low + path)
            if self._hides(low, parent):
                return False
        return False

    def _hides(self, layer: str, directory: str) -> bool:
        """Whether ``layer`` hides ``directory`` of the layers below (a whiteout of it or of a
        parent, or an opaque one). Memoised: an agent's files share few directories."""
        key = (layer, directory)
        if key not in self._hidden:
            up = directory.rsplit("/", 1)[0]
            here = layer + directory
            self._hidden[key] = bool(directory) and (
                _whiteout(here) or (os.path.isdir(here) and _opaque(here)) or self._hides(layer, up))
        return self._hidden[key]

    def image_names(self, directory: str) -> set[str]:
        """The names the image holds in ``directory``, as its merged view shows them: from the
        topmost layer down, a whiteout hides the name in the layers below, and a directory that a
        layer made opaque, or deleted with a parent, hides every layer below. Read every layer
        without the deletions, a command the Dockerfile removed (``RUN rm /usr/bin/curl``) was
        still the image's, so the agent's honest reinstall of it looked like a shadow of it."""
        names: set[str] = set()
        gone: set[str] = set()
        for low in self.lowers:
            here = low + directory
            try:
                with os.scandir(here) as it:
                    entries = [(e.name, _whiteout(e.path)) for e in it]
            except OSError:
                if self._hides(low, directory.rsplit("/", 1)[0]) or _whiteout(here):
                    break
                continue
            names.update(n for n, out in entries if not out and n not in gone)
            gone.update(n for n, out in entries if out)
            if _opaque(here):
                break
        return names

    def same_as_image(self, e: Entry) -> bool:
        """Whether a changed file is the image's own: same bytes (or link target), mode, owner and
        file capabilities. The overlay copies a file up whole when only its metadata is touched
        (``chmod -R``, ``chown`` to the owner it had, ``touch``), and ``compileall -f`` rewrites
        the same bytecode: such a file looks changed but gives the runner exactly what the image
        did. Compared at most ``COMPARE_BUDGET`` bytes a trial; past that, changed (the cautious
        side)."""
        if e.host is None or e.change != "changed" or e.type not in ("file", "symlink"):
            return False
        low = self._topmost(e.path)
        if low is None or not self.in_image(e.path):
            return False
        try:
            a, b = os.lstat(e.host), os.lstat(low)
            if (a.st_mode, a.st_uid, a.st_gid, a.st_size) != (b.st_mode, b.st_uid, b.st_gid, b.st_size) \
                    or _capability(e.host) != _capability(low):
                return False
            if stat.S_ISLNK(a.st_mode):
                return os.readlink(e.host) == os.readlink(low)
        except OSError:
            return False
        if self._compared + a.st_size > COMPARE_BUDGET:
            return False
        self._compared += a.st_size
        return _same_bytes(e.host, low)

    def _topmost(self, path: str) -> str | None:
        """Where the topmost image layer that has ``path`` holds it (whiteouts not looked at)."""
        return next((low + path for low in self.lowers if os.path.lexists(low + path)), None)

    def read_image(self, path: str, limit: int = 65536) -> bytes | None:
        """The first ``limit`` bytes of the image's version of ``path`` (its topmost layer's)."""
        low = self._topmost(path)
        return None if low is None else _read_bounded(low, limit)

    def scan(self) -> LayerScan:
        """Every change, from the upper directory (or ``docker diff`` where it cannot be read), by
        ``upper_walk.walk_upper``, so a tree deeper than PATH_MAX (which made ``docker diff`` fail)
        is read whole."""
        if self.upper is None:
            return self._diff()
        out = LayerScan(source="upperdir", problem=self.problem)

        def unreadable(path: str, what: str, exc: OSError) -> None:
            verb = "read" if what == "read" else "opened"
            out.problem, out.incomplete = f"{path} could not be {verb} in the writable layer: {exc}", True

        try:
            for path, st in walk_upper(self.upper, unreadable):
                if len(out.entries) >= MAX_ENTRIES:
                    out.incomplete = True
                    out.problem = f"the writable layer holds more than {MAX_ENTRIES} entries; the rest were not read"
                    break
                out.entries.append(self._entry(path, st))
        except OSError as exc:  # the upper directory itself
            return LayerScan(source="none", problem=f"the writable layer could not be opened: {exc}", incomplete=True)
        return out

    def _entry(self, path: str, st: os.stat_result) -> Entry:
        host = self.upper + path if self.upper is not None else None
        kind = _type_of(st.st_mode)
        if kind == "char" and st.st_rdev == 0:
            return Entry(path, "deleted", "whiteout", host=host)
        if kind == "dir":
            opaque = _opaque(host or "")
            change: Change = "added" if opaque or not self.in_image(path) else "changed"
            return Entry(path, change, kind, st.st_mode, 0, host, opaque, st.st_ino, st.st_ctime_ns)
        change = "changed" if self.in_image(path) else "added"
        return Entry(path, change, kind, st.st_mode, st.st_size, host, ino=st.st_ino, ctime_ns=st.st_ctime_ns)

    def _diff(self) -> LayerScan:
        try:
            raw = get_client().api.diff(self.container) or []
        except DOCKER_ERRORS as exc:
            return LayerScan(source="none", problem=f"{self.problem}; docker diff failed too: {exc}", incomplete=True)
        entries = [Entry(c["Path"], _KINDS.get(c.get("Kind", 0), "changed"), "unknown") for c in raw]  # type: ignore[arg-type]
        return LayerScan(entries=entries, source="docker-diff", problem=self.problem)

    def reset_atimes(self, entries: Iterable[Entry]) -> dict[str, Stamp]:
        """Set the atime of ``entries`` to 0 (mtime kept) and stamp each (``access_times``)."""
        return reset_atimes(hosts(e for e in entries if e.type in ("file", "symlink", "fifo")))


def hosts(entries: Iterable[Entry]) -> list[tuple[str, str]]:
    """(path in the container, path on the host) of the entries the host can read."""
    return [(e.path, e.host) for e in entries if e.host is not None]


def read_head(entry: Entry, limit: int = 65536) -> bytes | None:
    """The first ``limit`` bytes of a regular file in the layer (never following a link)."""
    if entry.host is None or entry.type != "file":
        return None
    return _read_bounded(entry.host, limit)


def _read_bounded(host_path: str, limit: int) -> bytes | None:
    """Never following a link, never blocking on a FIFO, never touching the atime."""
    try:
        fd = os.open(host_path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOATIME)
    except OSError:
        return None
    try:
        return os.read(fd, limit)
    except OSError:
        return None
    finally:
        os.close(fd)


def _capability(host_path: str) -> bytes | None:
    try:
        return os.getxattr(host_path, "security.capability", follow_symlinks=False)
    except OSError:
        return None


def _same_bytes(a: str, b: str, chunk: int = 1 << 20) -> bool:
    """Byte for byte, never following a link or blocking on a FIFO swapped in since the lstat."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOATIME
    try:
        fa = os.open(a, flags)
    except OSError:
        return False
    try:
        fb = os.open(b, flags)
    except OSError:
        os.close(fa)
        return False
    try:
        if not (stat.S_ISREG(os.fstat(fa).st_mode) and stat.S_ISREG(os.fstat(fb).st_mode)):
            return False
        while True:
            x, y = os.read(fa, chunk), os.read(fb, chunk)
            if x != y:
                return False
            if not x:
                return True
    except OSError:
        return False
    finally:
        os.close(fa)
        os.close(fb)


def link_target(entry: Entry) -> str | None:
    if entry.host is None or entry.type != "symlink":
        return None
    try:
        return os.readlink(entry.host)
    except OSError:
        return None
