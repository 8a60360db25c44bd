"""The dataset cache: one verified entry per dataset version, fetched once, shared, atomic.

Layout under ``<cache dir>/datasets`` (``tasks_lib/cache_dir.py``; default ``~/.cache/tbflow/datasets``):

* ``<kind>/<name>@<version>-<source key>/``: an entry (``kind`` registry or package; ``/`` of an
  org name becomes ``__``; the key is 12 hex digits of sha256 of the registry's canonical
  location, so two registries never share an entry). It holds ``tasks/<task>/`` and
  ``manifest.json``, which is written last, inside a temporary directory that is then renamed
  into place: an entry is complete or absent, never half filled.
* ``.locks/``: one ``flock`` file per entry, held while an entry is verified or fetched, so
  concurrent runs fetch once and never see one being replaced.
* ``.tmp/``: entries being built; a leftover of a killed fetch is removed by the next one.

An entry is verified on every use: every file is hashed again and each task's Harbor digest
recomputed and compared with the manifest. In one process an entry whose files have not changed
(same sizes, mtimes and inodes) since it was verified is not hashed again: a run plans its job
more than once.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import re
import secrets
import shutil
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

from pydantic import ValidationError

from tasks_lib.cache_dir import cache_dir
from tasks_lib.dataset.dataset_models import CacheManifest
from tasks_lib.dataset.digest import file_hashes, task_digest

MANIFEST = "manifest.json"
TASKS = "tasks"
_verified: dict[tuple[Path, str], tuple] = {}


def datasets_root() -> Path:
    """``datasets`` in tbflow's cache dir (``tasks_lib/cache_dir.py``)."""
    return cache_dir() / "datasets"


def entry_key(kind: str, name: str, version: str, canonical_source: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9._@+-]", "_", f"{name.replace('/', '__')}@{version}")
    return f"{kind}/{slug}-{hashlib.sha256(canonical_source.encode()).hexdigest()[:12]}"


def entry_dir(key: str) -> Path:
    return datasets_root() / key


@contextmanager
def entry_lock(key: str) -> Iterator[None]:
    """Hold the host-wide lock of one entry (waiting while another process fetches it)."""
    path = datasets_root() / ".locks" / (key.replace("/", "_") + ".lock")
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def read_manifest(entry: Path) -> CacheManifest | None:
    try:
        return CacheManifest.model_validate_json((entry / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError, ValidationError):
        return None


def _signature(entry: Path) -> tuple:
    out = []
    for dirpath, _dirs, names in os.walk(entry):
        for n in names:
            st = os.lstat(os.path.join(dirpath, n))
            out.append((dirpath, n, st.st_size, st.st_mtime_ns, st.st_ino))
    return tuple(sorted(out))


def _task_problems(name: str, expected: dict[str, str], found: dict[str, str]) -> list[str]:
    changed = sorted(k for k in expected.keys() & found.keys() if expected[k] != found[k])
    added = sorted(found.keys() - expected.keys())
    removed = sorted(expected.keys() - found.keys())
    parts = [f"{what}: {', '.join(paths)}" for what, paths in
             (("changed", changed), ("added", added), ("removed", removed)) if paths]
    return [f"task {name}: {'; '.join(parts)}"] if parts else []


def verify_entry(entry: Path, manifest: CacheManifest) -> list[str]:
    """What differs from the manifest, task by task and file by file (empty: the entry is intact)."""
    return verify_tasks(entry / TASKS, manifest)


def verify_tasks(tasks_dir: Path, manifest: CacheManifest) -> list[str]:
    """``verify_entry`` for a directory of task directories (an entry's ``tasks/``, an export)."""
    sig = _signature(tasks_dir)
    if _verified.get((tasks_dir, manifest.source.digest)) == sig:
        return []
    problems: list[str] = []
    listed = {p.name for p in manifest.source.tasks}
    present = {p.name for p in tasks_dir.iterdir() if p.is_dir()} if tasks_dir.is_dir() else set()
    problems += [f"task {n}: not in the manifest" for n in sorted(present - listed)]
    for pin in manifest.source.tasks:
        task_dir = tasks_dir / pin.name
        if not task_dir.is_dir():
            problems.append(f"task {pin.name}: missing")
            continue
        found = file_hashes(task_dir)
        mine = _task_problems(pin.name, manifest.files.get(pin.name, {}), found)
        digest = task_digest(task_dir, found)
        if not mine and digest != pin.digest:  # the file list matches, so only the manifest can be wrong
            mine.append(f"task {pin.name}: digest {digest}, the manifest says {pin.digest}")
        problems += mine
    if not problems:
        _verified[(tasks_dir, manifest.source.digest)] = sig
    return problems


def install_entry(key: str, build: Callable[[Path], CacheManifest]) -> Path:
    """Build an entry in a temporary dir with ``build`` (it fills ``tasks/``) and rename it into place.

    Call with the entry's lock held. A failure leaves the existing entry, if any, as it was."""
    root = datasets_root()
    flat = key.replace("/", "_")
    tmp_root = root / ".tmp"
    tmp_root.mkdir(parents=True, exist_ok=True)
    for stale in tmp_root.glob(f"{flat}.*"):  # a fetch of this entry that was killed (we hold its lock)
        shutil.rmtree(stale, ignore_errors=True)
    tmp = tmp_root / f"{flat}.{secrets.token_hex(4)}"
    tmp.mkdir()
    try:
        manifest = build(tmp)
        for leftover in tmp.iterdir():  # git checkouts made on the way
            if leftover.name != TASKS:
                shutil.rmtree(leftover)
        (tmp / MANIFEST).write_text(manifest.model_dump_json(indent=1), encoding="utf-8")
        final = root / key
        final.parent.mkdir(parents=True, exist_ok=True)
        old = tmp_root / f"{flat}.old-{secrets.token_hex(4)}"
        if final.exists():
            os.rename(final, old)
        os.rename(tmp, final)
        shutil.rmtree(old, ignore_errors=True)
        return final
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def cached_entries() -> list[tuple[Path, CacheManifest]]:
    """Every complete entry in the cache, with its manifest."""
    root = datasets_root()
    out = []
    for kind in ("registry", "package"):
        for entry in sorted((root / kind).glob("*")) if (root / kind).is_dir() else []:
            manifest = read_manifest(entry)
            if manifest is not None:
                out.append((entry, manifest))
    return out


def tree_size(path: Path) -> int:
    return sum(os.lstat(os.path.join(d, n)).st_size for d, _s, names in os.walk(path) for n in names)
