"""Exported datasets (``tbflow datasets download NAME --to DIR``): runnable offline, still verified.

An export is a plain directory of task directories, so ``tbflow run DIR`` runs it on a machine
without network or cache, plus ``tbflow-dataset.json`` (the cache manifest: name, version,
source, commits, digests and every file's hash). A ``DATASET`` directory holding that file is
verified like a cache entry before it runs, and the job records the dataset's name and pins as
if it had been given by name; a changed file is refused, naming it (there is nothing to fetch
it again from).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from tasks_lib.dataset import cache
from tasks_lib.dataset.dataset_models import CacheManifest, DatasetSource
from tasks_lib.errors import InputError

EXPORT_MANIFEST = "tbflow-dataset.json"


def export_dataset(tasks_dir: Path, source: DatasetSource, to: Path) -> Path:
    """Copy a verified dataset's tasks to ``to`` (new or empty) with its manifest; return ``to``."""
    entry = tasks_dir.parent
    manifest = cache.read_manifest(entry)
    if manifest is None or manifest.source.digest != source.digest:
        raise InputError("DATASET", f"{source.pinned_spec}: no cache manifest at {entry}")
    if to.exists() and (not to.is_dir() or any(to.iterdir())):
        raise InputError("--to", f"{to} exists and is not an empty directory")
    tmp = to.with_name(f".{to.name}.partial-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    try:
        shutil.copytree(tasks_dir, tmp, symlinks=True)
        (tmp / EXPORT_MANIFEST).write_text(manifest.model_dump_json(indent=1), encoding="utf-8")
        if to.exists():
            to.rmdir()
        os.rename(tmp, to)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return to


def exported_source(directory: Path) -> DatasetSource | None:
    """The dataset an export holds, verified; None for a directory that is not an export."""
    path = directory / EXPORT_MANIFEST
    if not path.is_file():
        return None
    try:
        manifest = CacheManifest.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(str(path), f"not a tbflow dataset manifest: {exc}") from exc
    problems = cache.verify_tasks(directory, manifest)
    if problems:
        raise InputError("DATASET", f"{directory}: the exported dataset {manifest.source.pinned_spec} changed "
                                    f"({'; '.join(problems)}); download it again")
    return manifest.source
