"""Package datasets (``org/name@ref``): a ``dataset.toml`` listing tasks by name and sha256 digest.

The format is Harbor's ``DatasetManifest``: ``[dataset] name = "org/name"`` and ``[[tasks]]`` with
``name = "org/task"`` and ``digest = "sha256:<64 hex>"`` (``[[files]]`` may be there; tbflow does
not use dataset-level files). The digests are the pins: every task is checked against its digest
when it is copied into the cache and on every use after.

Where the ``dataset.toml`` comes from (``--registry``):

* a store directory: ``STORE/datasets/<org>/<name>/<ref>/dataset.toml`` (``ref`` defaults to
  ``latest``); each task is the directory next to it named like the task (``<task>/``, the layout
  of Harbor's terminal-bench-2-1 repository), else ``STORE/tasks/<org>/<task>/<hex digest>/``
  (digest-named, like Harbor's package cache);
* a git repository (a URL ending in ``.git``, or ``git+URL``): ``ref`` is a commit (a full SHA
  unless ``--allow-unpinned``); ``dataset.toml`` is at its root or in ``tasks/``, the task
  directories next to it.
"""

from __future__ import annotations

import shutil
import tempfile
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError
from pydantic_core import ErrorDetails

from tasks_lib.dataset.dataset_models import TaskPin
from tasks_lib.dataset.git_fetch import GitError, fetch_paths
from tasks_lib.errors import InputError

DATASET_TOML = "dataset.toml"
GIT_TOML_PLACES = ("dataset.toml", "tasks/dataset.toml")
DIGEST_PATTERN = r"^sha256:[0-9a-f]{64}$"


class PackageTask(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str = Field(pattern=r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")
    digest: str = Field(pattern=DIGEST_PATTERN)

    @property
    def short(self) -> str:
        return self.name.split("/", 1)[1]


class PackageInfo(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    version: str | None = None
    description: str = ""


class DatasetToml(BaseModel):
    model_config = ConfigDict(extra="allow")

    schema_version: str = "1.0"
    dataset: PackageInfo
    tasks: list[PackageTask] = Field(min_length=1)


def is_git_source(location: str) -> bool:
    return location.startswith("git+") or location.rstrip("/").endswith(".git")


def git_url_of(location: str) -> str:
    return location.removeprefix("git+")


#: what a field's pattern means, in words (a regex is not an error message)
FIELD_RULES = {
    "name": "a task name is ORG/TASK: two parts of letters, digits, '.', '_' or '-' (each starting with a "
            "letter or digit) joined by one '/', e.g. \"my-org/hello-world\"",
    "digest": "a digest is \"sha256:\" and 64 lowercase hex digits (the task directory's sha256)",
}


def _field_error(err: ErrorDetails) -> str:
    """``tasks[2].name = 'hello': a task name is ORG/TASK ...`` for one validation error."""
    loc = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in err["loc"]).lstrip(".")
    field = str(err["loc"][-1]) if err["loc"] else ""
    if err["type"] == "string_pattern_mismatch" and field in FIELD_RULES:
        return f"{loc} = {err['input']!r}: {FIELD_RULES[field]}"
    return f"{loc}: {err['msg']}"


def read_dataset_toml(path: Path, name: str, shown_as: str | None = None) -> DatasetToml:
    """Parse ``path`` and check it describes ``name``; ``InputError`` naming the file and field.

    ``shown_as`` is the file as the user knows it (``URL at COMMIT: dataset.toml`` for a git
    repository): ``path`` may be a checkout in a temp dir that is gone when the error is read."""
    where = shown_as or str(path)
    try:
        toml = DatasetToml.model_validate(tomllib.loads(path.read_text(encoding="utf-8")))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise InputError(where, f"cannot read: {exc}") from exc
    except ValidationError as exc:
        raise InputError(where, _field_error(exc.errors()[0])) from exc
    if toml.dataset.name != name:
        raise InputError(where, f"describes {toml.dataset.name!r}, not {name!r}")
    return toml


def store_pins(store: Path, name: str, ref: str) -> list[TaskPin]:
    """The pins of ``name@ref`` in a store directory (``InputError`` listing what the store has)."""
    org, short = name.split("/", 1)
    toml_path = store / "datasets" / org / short / ref / DATASET_TOML
    if not toml_path.is_file():
        have = sorted(f"{p.parent.parent.parent.name}/{p.parent.parent.name}@{p.parent.name}"
                      for p in store.glob(f"datasets/*/*/*/{DATASET_TOML}"))
        raise InputError("DATASET", f"{name}@{ref}: not in the store {store} (no {toml_path.relative_to(store)}); "
                                    f"it has: {', '.join(have) or 'no package datasets'}")
    pins = []
    for task in read_dataset_toml(toml_path, name).tasks:
        places = [toml_path.parent / task.short,
                  store / "tasks" / task.name / task.digest.removeprefix("sha256:")]
        found = next((p for p in places if (p / "task.toml").is_file()), None)
        if found is None:
            raise InputError("DATASET", f"{name}@{ref}: task {task.name} is in none of: "
                                        f"{', '.join(str(p) for p in places)}")
        pins.append(TaskPin(name=task.short, path=str(found.resolve()), digest=task.digest))
    return pins


def git_pins(location: str, name: str, ref: str, work: Path) -> tuple[list[TaskPin], str]:
    """The pins of ``name`` in the git repository ``location`` at ``ref``, and the commit SHA."""
    url = git_url_of(location)
    scratch = Path(tempfile.mkdtemp(prefix="toml-", dir=work))
    checkout = scratch / "repo"
    try:
        try:
            sha = fetch_paths(url, ref, list(GIT_TOML_PLACES), checkout, dirs=False)
        except GitError as exc:
            raise InputError("DATASET", f"{name}@{ref}: cannot fetch {url} at {ref}: {exc}") from exc
        place = next((p for p in GIT_TOML_PLACES if (checkout / p).is_file()), None)
        if place is None:
            raise InputError("DATASET", f"{name}@{ref}: {url} at {sha} has no {' or '.join(GIT_TOML_PLACES)}")
        toml = read_dataset_toml(checkout / place, name, shown_as=f"{url} at {sha}: {place}")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    base = Path(place).parent
    return [TaskPin(name=t.short, path=(base / t.short).as_posix(), git_url=url, commit=sha, digest=t.digest)
            for t in toml.tasks], sha
