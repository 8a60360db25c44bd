"""A job's identity: what must not change for recorded trials to stay comparable.

It covers the run config that decides results (harnesses, model, attempts, timeout multiplier),
every file of every task (so a fixed ``test.sh`` or a changed COPY'd file is seen), the source of
each harness adapter (its whole folder when it is a package, so a new file cannot be missed; for a
plug-in its whole top-level package, or its file, plus the tbflow classes it builds on, and where
it came from: an entry point's distribution and version), and
the code that can decide a trial's verdict with tbflow's version: every project module in the
import closure of the trial flow and the non-Python files beside them (the judge's and the
relay's C sources), derived from the code by ``import_closure.verdict_sources``, never listed.
Resuming a job whose identity changed would mix old and new rules in one score, so resume refuses
and says exactly what changed, file by file.

A dataset given by name adds its name, version and each task's pin (git URL, commit, path,
Harbor digest), so a resume against another commit of the same name is refused with what moved.
Where the registry file lives is left out: moving it changes no task.

Run-time knobs that do not change what a trial measures (concurrency, retries of environment
failures, where the jobs live) are deliberately left out.

Nothing in it depends on where the code sits on disk: tbflow's files are keyed relative to the
repository, a plug-in's relative to the directory its top-level package (or its file) is in, and
the config names harnesses by their keys, not by the path a file plug-in was given as. So the same
job resumes from another checkout, machine or venv, and only a real change is refused.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from tasks_lib import __version__
from tasks_lib.dataset.dataset_models import DatasetSource
from tasks_lib.records.harness_source import HarnessSource
from tasks_lib.records.import_closure import verdict_sources

IDENTITY_CONFIG_KEYS = ("harnesses", "model", "attempts", "timeout_multiplier")
#: in the identity only when set, so the identity of a job recorded before they existed is unchanged
IDENTITY_FLAGS = ("build", "verbatim_test_sh")
#: in the identity with their value, only when set: a regrade of another source is another job
IDENTITY_VALUES = ("regrade_from",)
#: The module whose import closure is the code that can decide a verdict (``import_closure``).
VERDICT_ENTRY = "flows.trial_flow"
REPO_ROOT = Path(__file__).resolve().parents[2]
_SKIP_PARTS = {"__pycache__", ".pytest_cache"}


class HarnessIdentity(BaseModel):
    version: str
    files: dict[str, str]
    #: a plug-in's origin without paths (``HarnessSource.portable``); None for a built-in
    source: str | None = None


class JudgeIdentity(BaseModel):
    """tbflow's version and the hashes of the code that can decide a verdict (``verdict_sources``)."""

    version: str
    files: dict[str, str]


class DatasetIdentity(BaseModel):
    """A named dataset: ``name@version`` and, per task, its pin (git_url, commit, path, digest)."""

    kind: str
    name: str
    version: str
    tasks: dict[str, dict[str, str | None]]


class JobIdentity(BaseModel):
    config: dict
    tasks: dict[str, dict[str, str]]
    harnesses: dict[str, HarnessIdentity]
    #: None only in jobs recorded before tbflow recorded it (resuming those is refused)
    judge: JudgeIdentity | None = None
    #: None for a dataset given as a directory
    dataset: DatasetIdentity | None = None

    @property
    def digest(self) -> str:
        data = self.model_dump(mode="json")
        if data["dataset"] is None:  # a directory dataset keeps the digest it had before names existed
            del data["dataset"]
        blob = json.dumps(data, sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(blob.encode()).hexdigest()


def file_hashes(root: Path) -> dict[str, str]:
    """sha256 of every file under ``root`` (path relative to it; mode included for scripts)."""
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if not p.is_file() or _SKIP_PARTS.intersection(p.relative_to(root).parts) or p.suffix == ".pyc":
            continue
        out[p.relative_to(root).as_posix()] = hash_with_mode(p)
    return out


def hash_with_mode(p: Path) -> str:
    """sha256 of the file's bytes and its execute bits (a script made non-executable changes)."""
    h = hashlib.sha256(p.read_bytes())
    h.update(f"\0{p.stat().st_mode & 0o111:o}".encode())
    return h.hexdigest()


def adapter_files(harness) -> dict[str, str]:
    """Hashes of the files that define a harness adapter, keyed by a path relative to the repo
    root (tbflow's files) or to the plug-in's root (``plugin_root``), never an absolute one."""
    paths = harness.adapter_sources() if hasattr(harness, "adapter_sources") else default_adapter_sources(harness)
    plugin = plugin_root(harness)
    if plugin is not None:
        paths = [*paths, plugin[1]]
    out: dict[str, str] = {}
    for p in paths:
        p = Path(p).resolve()
        items = file_hashes(p).items() if p.is_dir() else [("", hashlib.sha256(p.read_bytes()).hexdigest())]
        for rel, digest in items:
            out[portable_key((p / rel) if rel else p, plugin[0] if plugin else None)] = digest
    return out


def _is_tbflow(path: Path) -> bool:
    return path.is_relative_to(REPO_ROOT) and path.relative_to(REPO_ROOT).parts[:1] in (("harnesses",), ("tasks_lib",),
                                                                                     ("flows",))


def portable_key(path: Path, plugin_dir: Path | None) -> str:
    """``path`` relative to tbflow's repository (its own packages), else to the plug-in's root,
    else to the deepest import-path directory holding it; a file under none keeps only its name."""
    if _is_tbflow(path):
        return path.relative_to(REPO_ROOT).as_posix()
    dirs = sorted({Path(p).resolve() for p in sys.path if p and Path(p).is_dir()}, key=lambda d: -len(d.parts))
    for root in [*([plugin_dir] if plugin_dir else []), *dirs]:
        if path.is_relative_to(root):
            return path.relative_to(root).as_posix()
    return f"outside/{path.name}"


def _file_of(module) -> Path | None:
    try:
        return Path(inspect.getfile(module)).resolve()
    except TypeError:  # a namespace package has no file
        return None


def plugin_root(harness) -> tuple[Path, Path] | None:
    """For a harness defined outside tbflow: (the directory its top-level package or its file is
    in, that package's directory or that file); None for tbflow's own."""
    module = sys.modules[type(harness).__module__]
    src = _file_of(module)
    if src is None or _is_tbflow(src):
        return None
    top_file = _file_of(sys.modules.get(module.__name__.split(".")[0], module)) or src
    own = top_file.parent if top_file.name == "__init__.py" else top_file
    return own.parent, own


def default_adapter_sources(harness) -> list[Path]:
    """The adapter's module (its whole folder if it is a package) and every tbflow module of the
    classes it builds on (the shared interface, a base such as ``OracleHarness`` a plug-in reuses)."""
    module = sys.modules[type(harness).__module__]
    src = Path(inspect.getfile(module)).resolve()
    main = src.parent if src.name == "__init__.py" else src
    bases: list[Path] = []
    for cls in type(harness).__mro__[1:]:
        path = _file_of(sys.modules[cls.__module__]) if cls.__module__ in sys.modules else None
        if path is not None and _is_tbflow(path) and path not in bases and path != main:
            bases.append(path)
    return [main, *bases]


def judge_identity(entry: str = VERDICT_ENTRY, root: Path = REPO_ROOT) -> JudgeIdentity:
    """Hashes of every file of ``verdict_sources(root, entry)``, keyed relative to ``root``."""
    files = {rel: hash_with_mode(root / rel) for rel in verdict_sources(root, entry)}
    return JudgeIdentity(version=__version__, files=files)


def dataset_identity(source: DatasetSource | None, task_names: list[str]) -> DatasetIdentity | None:
    """The identity part of a named dataset, for the tasks the job runs (``--include`` applied)."""
    if source is None:
        return None
    wanted = set(task_names)
    return DatasetIdentity(kind=source.kind, name=source.name, version=source.version, tasks={
        p.name: {"git_url": p.git_url, "commit": p.commit, "path": p.path if p.git_url else None, "digest": p.digest}
        for p in source.tasks if p.name in wanted})


def compute_identity(config: dict, tasks: dict[str, Path], harnesses: Mapping[str, Any],
                     sources: Mapping[str, HarnessSource] | None = None,
                     dataset: DatasetIdentity | None = None) -> JobIdentity:
    """``harnesses`` by key; ``sources`` says where the plug-ins among them came from. The config's
    ``harnesses`` are the keys, so a file plug-in named by another path is the same job."""
    sources = sources or {}

    def portable(name: str) -> str | None:
        src = sources.get(name)
        return src.portable() if src is not None and src.origin != "built-in" else None

    config = {**config, "harnesses": list(harnesses)} if harnesses else config
    return JobIdentity(
        dataset=dataset,
        judge=judge_identity(),
        config={**{k: config.get(k) for k in IDENTITY_CONFIG_KEYS},
                **{k: True for k in IDENTITY_FLAGS if config.get(k)},
                **{k: config[k] for k in IDENTITY_VALUES if config.get(k)}},
        tasks={name: file_hashes(path) for name, path in sorted(tasks.items())},
        harnesses={name: HarnessIdentity(version=h.version, files=adapter_files(h), source=portable(name))
                   for name, h in sorted(harnesses.items())},
    )


def _file_changes(what: str, old: dict[str, str], new: dict[str, str]) -> list[str]:
    changed = sorted(k for k in old.keys() & new.keys() if old[k] != new[k])
    added = sorted(new.keys() - old.keys())
    removed = sorted(old.keys() - new.keys())
    parts = []
    if changed:
        parts.append(f"{what} changed: {', '.join(changed)}")
    if added:
        parts.append(f"{what} has new files: {', '.join(added)}")
    if removed:
        parts.append(f"{what} lost files: {', '.join(removed)}")
    return parts


def _dataset_changes(old: DatasetIdentity | None, new: DatasetIdentity | None) -> list[str]:
    """``dataset terminal-bench@2.0 -> terminal-bench@2.1``, ``task t: commit a -> b``, ..."""
    if old is None and new is None:
        return []
    if old is None or new is None:
        label = lambda d: f"{d.name}@{d.version}" if d else "a directory"
        return [f"dataset: {label(old)} -> {label(new)}"]
    out = []
    if (old.name, old.version) != (new.name, new.version):
        out.append(f"dataset: {old.name}@{old.version} -> {new.name}@{new.version}")
    for task in sorted(old.tasks.keys() & new.tasks.keys()):
        for field in ("git_url", "commit", "path", "digest"):
            a, b = old.tasks[task].get(field), new.tasks[task].get(field)
            if a != b:
                out.append(f"dataset task {task} {field}: {a} -> {b}")
    return out


def verifier_side_only(old: JobIdentity, new: JobIdentity) -> bool:
    """Whether the only changes are to the tasks' verifier side (``tests/``, ``task.toml``): a
    minor version, which a regrade judges from the recorded trials instead of running them again."""
    def agent_side(identity: JobIdentity) -> JobIdentity:
        tasks = {name: {k: v for k, v in files.items() if not k.startswith(("tests/", "task.toml"))}
                 for name, files in identity.tasks.items()}
        return identity.model_copy(update={"tasks": tasks})

    return bool(identity_changes(old, new)) and not identity_changes(agent_side(old), agent_side(new))


def identity_changes(old: JobIdentity, new: JobIdentity) -> list[str]:
    """Human-readable differences, e.g. ``task hello-file changed: tests/test.sh``."""
    out: list[str] = _dataset_changes(old.dataset, new.dataset)
    for k in IDENTITY_CONFIG_KEYS + IDENTITY_FLAGS + IDENTITY_VALUES:
        if old.config.get(k) != new.config.get(k):
            out.append(f"config {k}: {old.config.get(k)!r} -> {new.config.get(k)!r}")
    for name in sorted(old.tasks.keys() | new.tasks.keys()):
        if name not in new.tasks:
            out.append(f"task {name} is no longer in the dataset")
        elif name not in old.tasks:
            out.append(f"task {name} was added to the dataset")
        else:
            out += _file_changes(f"task {name}", old.tasks[name], new.tasks[name])
    if old.judge is None and new.judge is not None:
        out.append("the job was recorded before tbflow recorded the code that judges trials")
    elif old.judge is not None and new.judge is not None:
        if old.judge.version != new.judge.version:
            out.append(f"tbflow version: {old.judge.version} -> {new.judge.version}")
        out += _file_changes("tbflow's judging code", old.judge.files, new.judge.files)
    for name in sorted(old.harnesses.keys() & new.harnesses.keys()):
        o, n = old.harnesses[name], new.harnesses[name]
        if o.version != n.version:
            out.append(f"harness {name} version: {o.version} -> {n.version}")
        if o.source != n.source:
            out.append(f"harness {name} source: {o.source or 'built-in'} -> {n.source or 'built-in'}")
        out += _file_changes(f"harness {name} adapter", o.files, n.files)
    return out
