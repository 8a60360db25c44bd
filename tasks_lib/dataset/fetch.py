"""Materialising a dataset's tasks from their pins into a directory, and checking their digests.

Pins are grouped by (git URL, commit), so each commit of each repository is fetched once, sparse
to exactly its task paths. A pin without a git URL is a local directory (a registry task given by
path, a store's task) and is copied. A pin that already carries a digest (a ``dataset.toml``
entry, or a cache entry being fetched again) must come out with that digest, or nothing is kept.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from tasks_lib.dataset.dataset_models import TaskPin
from tasks_lib.dataset.digest import file_hashes, task_digest
from tasks_lib.dataset.git_fetch import GitError, copy_tree, fetch_paths
from tasks_lib.errors import InputError


def _groups(pins: list[TaskPin]) -> dict[tuple[str | None, str | None], list[TaskPin]]:
    out: dict[tuple[str | None, str | None], list[TaskPin]] = {}
    for pin in pins:
        out.setdefault((pin.git_url, pin.commit if pin.git_url else None), []).append(pin)
    return out


def _fetch_group(label: str, url: str, ref: str, pins: list[TaskPin], tasks_dir: Path, work: Path) -> str:
    """Fetch one (repository, commit) group into ``tasks_dir``; return the commit SHA."""
    scratch = Path(tempfile.mkdtemp(prefix="git-", dir=work))
    try:
        sha = fetch_paths(url, ref, sorted({p.path for p in pins}), scratch / "repo")
        for pin in pins:
            copy_tree(scratch / "repo" / pin.path, tasks_dir / pin.name)
    except GitError as exc:
        raise InputError("DATASET", f"{label}: cannot fetch {url} at {ref}: {exc}") from exc
    except FileNotFoundError as exc:
        raise InputError("DATASET", f"{label}: {url} at {ref} has no task directory {exc.args[0]!r}") from exc
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return sha


def materialize(label: str, pins: list[TaskPin], tasks_dir: Path) -> tuple[list[TaskPin], dict[str, dict[str, str]]]:
    """Write every pinned task to ``tasks_dir/<name>``; return the pins (commit resolved, digest
    computed) and each task's file hashes. ``InputError`` (one line) when a source cannot be
    reached or a digest differs from the pinned one."""
    tasks_dir.mkdir(parents=True)
    commits: dict[str, str] = {}
    for (url, ref), group in _groups(pins).items():
        if url is None:
            for pin in group:
                src = Path(pin.path)
                if not (src / "task.toml").is_file():
                    raise InputError("DATASET", f"{label}: task {pin.name}: {src} is not a task directory")
                copy_tree(src, tasks_dir / pin.name)
            continue
        sha = _fetch_group(label, url, ref or "HEAD", group, tasks_dir, tasks_dir.parent)
        commits.update({p.name: sha for p in group})
    out: list[TaskPin] = []
    files: dict[str, dict[str, str]] = {}
    for pin in pins:
        hashes = file_hashes(tasks_dir / pin.name)
        digest = task_digest(tasks_dir / pin.name, hashes)
        if pin.digest and pin.digest != digest:
            raise InputError("DATASET", f"{label}: task {pin.name} from {pin.git_url or pin.path} has digest "
                                        f"{digest}, but {pin.digest} is pinned; not using it")
        out.append(pin.model_copy(update={"digest": digest, "commit": commits.get(pin.name, pin.commit)}))
        files[pin.name] = hashes
    return out, files
