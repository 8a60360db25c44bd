"""From a ``DATASET`` argument to a local directory of verified tasks, plus what to record.

A directory is used as it is. A name is looked up in the cache first: an entry of that exact
version (from the same registry) that verifies is used without reading the registry or calling
git, so a job runs offline once its dataset is cached. An entry that fails verification is
reported file by file and fetched again from the pins in its own manifest (no registry lookup),
never run as it is. Otherwise the registry (or store, or git repository) is read and the dataset
fetched into a new entry. Every step that can fail for bad input raises ``InputError`` (one
line, exit 2) before anything cached is replaced.
"""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from pydantic import BaseModel

from tasks_lib.dataset import cache, packages
from tasks_lib.dataset.dataset_models import CacheManifest, DatasetSource, TaskPin
from tasks_lib.dataset.digest import dataset_digest
from tasks_lib.dataset.exports import exported_source
from tasks_lib.dataset.fetch import materialize
from tasks_lib.dataset.git_fetch import require_pinned
from tasks_lib.dataset.names import DatasetName, parse_dataset
from tasks_lib.dataset.registry import canonical, find_dataset, local_path, read_registry, registry_location
from tasks_lib.errors import InputError


class ResolvedDataset(BaseModel):
    """Where the tasks are; ``source`` None for a plain directory; ``notes`` to tell the user."""

    path: Path
    source: DatasetSource | None = None
    notes: list[str] = []


def resolve_dataset(text: str, registry: str | None = None, allow_unpinned: bool = False) -> ResolvedDataset:
    """Resolve ``text`` (a directory, ``name[@version]`` or ``org/name[@ref]``) to a task directory."""
    parsed = parse_dataset(text)
    if parsed.kind == "dir":
        path = Path(text).expanduser()
        return ResolvedDataset(path=path, source=exported_source(path) if path.is_dir() else None)
    location = registry_location(registry)
    if parsed.version is not None:  # a pinned version: the cache alone may answer
        found = _from_cache(parsed, location)
        if found is not None:
            return found
    if parsed.kind == "registry":
        return _fetch_registry(parsed, location, allow_unpinned)
    return _fetch_package(parsed, location, allow_unpinned)


def _key(parsed: DatasetName, version: str, location: str) -> str:
    return cache.entry_key(parsed.kind, parsed.name, version, canonical(location))


def _result(entry: Path, manifest: CacheManifest, notes: list[str]) -> ResolvedDataset:
    return ResolvedDataset(path=entry / cache.TASKS, source=manifest.source, notes=notes)


def _from_cache(parsed: DatasetName, location: str) -> ResolvedDataset | None:
    """The verified cache entry of ``parsed`` (fetched again if damaged), or None when there is none."""
    assert parsed.version is not None
    key = _key(parsed, parsed.version, location)
    with cache.entry_lock(key):
        entry = cache.entry_dir(key)
        manifest = cache.read_manifest(entry)
        if manifest is None:
            return None
        problems = cache.verify_entry(entry, manifest)
        if not problems:
            return _result(entry, manifest, [])
        label = manifest.source.pinned_spec
        notes = [f"dataset {label}: the cached copy changed ({'; '.join(problems)}); fetching it again"]
        src = manifest.source
        try:
            entry = cache.install_entry(key, lambda tmp: _build(src, src.tasks, tmp))
        except InputError as exc:
            raise InputError(exc.where, f"{exc.message} (the cached copy changed: {'; '.join(problems)}; "
                                        "it is not used)") from exc
        return _result(entry, _manifest_of(entry), notes)


def _manifest_of(entry: Path) -> CacheManifest:
    manifest = cache.read_manifest(entry)
    assert manifest is not None  # install_entry just wrote it
    return manifest


def _build(template: DatasetSource, pins: list[TaskPin], tmp: Path) -> CacheManifest:
    """Fetch ``pins`` into ``tmp/tasks`` and describe the result (the build step of a cache entry)."""
    fetched, files = materialize(template.pinned_spec, pins, tmp / cache.TASKS)
    commits = {p.commit for p in fetched}
    source = template.model_copy(update={
        "tasks": fetched, "digest": dataset_digest([p.digest for p in fetched]),
        "commit": commits.pop() if len(commits) == 1 and None not in commits else None})
    return CacheManifest(source=source, fetched_at=datetime.now(timezone.utc), files=files)


def _install(parsed: DatasetName, version: str, location: str, pins: list[TaskPin], notes: list[str],
             source_text: str | None = None) -> ResolvedDataset:
    key = _key(parsed, version, location)
    template = DatasetSource(spec=parsed.text, kind=parsed.kind, name=parsed.name, version=version,  # type: ignore[arg-type]
                             source=source_text or canonical(location), digest="", tasks=pins)
    with cache.entry_lock(key):
        entry = cache.entry_dir(key)
        manifest = cache.read_manifest(entry)  # another run may have fetched it while we waited
        if manifest is not None and not cache.verify_entry(entry, manifest):
            return _result(entry, manifest, notes)
        entry = cache.install_entry(key, lambda tmp: _build(template, pins, tmp))
        manifest = _manifest_of(entry)
    n = len(manifest.source.tasks)
    return _result(entry, manifest, notes + [f"dataset {parsed.name}@{version}: fetched {n} task(s) from "
                                             f"{manifest.source.source} into {entry}"])


def _fetch_registry(parsed: DatasetName, location: str, allow_unpinned: bool) -> ResolvedDataset:
    try:
        datasets = read_registry(location)
    except InputError as exc:
        if "@" in parsed.text:
            raise
        # a bare word is first of all a directory the user may have mistyped: say both
        raise InputError("DATASET", f"{parsed.text}: no such directory, and as a dataset name: {exc.message}") from exc
    entry = find_dataset(datasets, parsed.name, parsed.version, location)
    label = f"{entry.name}@{entry.version}"
    if parsed.version is None:
        found = _from_cache(parsed.model_copy(update={"version": entry.version}), location)
        if found is not None:
            return found
    base = local_path(location)
    base = (base if base.is_dir() else base.parent) if base is not None else None
    pins = []
    for t in entry.tasks:
        if "/" in t.name.strip("/") or t.name in ("", ".", ".."):
            raise InputError("--registry", f"{location}: {label}: task name {t.name!r} is not a directory name")
        if t.git_url:
            if t.path.startswith("/") or ".." in t.path.split("/") or not t.path.strip("/."):
                raise InputError("--registry", f"{location}: {label}: task {t.name} path {t.path!r} is not a "
                                               "relative path inside its repository")
            ref = require_pinned(f"{label} task {t.name}", t.git_url, t.git_commit_id, allow_unpinned)
            pins.append(TaskPin(name=t.name, path=t.path, git_url=t.git_url, commit=ref, digest=""))
        elif base is None:
            raise InputError("--registry", f"{location}: {label}: task {t.name} has no git_url, and a path is "
                                           "only meaningful in a local registry file")
        else:
            pins.append(TaskPin(name=t.name, path=str((base / t.path).resolve()), digest=""))
    return _install(parsed, entry.version, location, pins, [])


def _fetch_package(parsed: DatasetName, location: str, allow_unpinned: bool) -> ResolvedDataset:
    ref = parsed.version or "latest"
    if packages.is_git_source(location):
        url = packages.git_url_of(location)
        want = require_pinned(parsed.label, url, ref, allow_unpinned)
        work = cache.datasets_root() / ".tmp"
        work.mkdir(parents=True, exist_ok=True)
        pins, _sha = packages.git_pins(location, parsed.name, want, work)
        return _install(parsed, ref, location, pins, [], source_text=url)
    store = local_path(location)
    if store is None or not store.is_dir():
        raise InputError("--registry", f"{location}: package datasets ({parsed.text}) come from a store "
                                       "directory or a git repository (URL ending in .git or git+URL)")
    return _install(parsed, ref, location, packages.store_pins(store, parsed.name, ref), [])
