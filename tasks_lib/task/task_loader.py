"""Turn a dataset path into loaded tasks, keeping malformed tasks as reported problems.

A dataset is either one task directory or a directory whose children are task directories. A
malformed task does not stop the others: it comes back as a ``TaskProblem`` naming the file and
the field, which the job reports next to its trials.
"""

from __future__ import annotations

import fnmatch
import tomllib
from pathlib import Path

from pydantic import BaseModel, ValidationError

from tasks_lib.path_hint import missing_dir_message
from tasks_lib.errors import InputError, TaskFormatError
from tasks_lib.task.key_check import check_keys, shown_key
from tasks_lib.task.task_model import Task, TaskConfig

REQUIRED = ("instruction.md", "environment", "tests/test.sh")
COMPOSE_FILES = ("docker-compose.yaml", "docker-compose.yml")


class TaskProblem(BaseModel):
    """A task directory that could not be loaded, and why."""

    name: str
    where: str
    message: str


class Dataset(BaseModel):
    """What a dataset path yielded: the runnable tasks and the broken ones."""

    root: Path
    tasks: list[Task]
    problems: list[TaskProblem]


def _field_name(loc: tuple) -> str:
    """``('environment', 'memory_mb')`` → ``[environment] memory_mb``."""
    parts = [str(p) for p in loc]
    if len(parts) >= 2:
        return f"[{parts[0]}] {'.'.join(parts[1:])}"
    return parts[0] if parts else "(file)"


def looks_like_task(path: Path) -> bool:
    return (path / "task.toml").is_file()


def load_task(path: Path) -> Task:
    """Load one task directory or raise ``TaskFormatError`` naming the file and field.

    Order matters for the message a user gets: the TOML first, then what its keys ask for (a
    key tbflow cannot honour is the reason, even when files are missing because of it: a
    multi-step task has no top-level instruction.md), then compose, then the required files.
    """
    path = path.resolve()
    toml_path = path / "task.toml"
    if not toml_path.is_file():
        raise TaskFormatError(str(toml_path), "missing (a Terminal-Bench task needs it)")
    try:
        raw = tomllib.loads(toml_path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise TaskFormatError(str(toml_path), f"not valid TOML: {exc}") from exc
    verdicts = check_keys(raw)
    if verdicts.refusals:
        first = verdicts.refusals[0]
        raise TaskFormatError(f"{toml_path} {shown_key(first.key)}",
                              "refused: " + "; ".join(r.text() for r in verdicts.refusals))
    env_dir = path / "environment"
    compose = [env_dir / n for n in COMPOSE_FILES if (env_dir / n).exists()]
    if compose:
        raise TaskFormatError(str(compose[0]), "refused: compose environments (sidecars, overrides of how "
                                               "'main' is built) are not supported yet; without them the "
                                               "task would run as something else")
    _refuse_verifier_image(path, raw)
    for rel in REQUIRED:
        if not (path / rel).exists():
            raise TaskFormatError(str(path / rel), "missing (a Terminal-Bench task needs it)")
    try:
        config = TaskConfig.model_validate(raw)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = f"{toml_path} {_field_name(err['loc'])}"
        raise TaskFormatError(where, err["msg"]) from exc
    if not (env_dir / "Dockerfile").is_file() and not config.environment.docker_image:
        raise TaskFormatError(str(env_dir / "Dockerfile"), "no Dockerfile and no [environment] docker_image")
    instruction = (path / "instruction.md").read_text(encoding="utf-8", errors="replace")
    return Task(
        name=path.name,
        path=path,
        config=config,
        instruction=instruction,
        has_solution=(path / "solution" / "solve.sh").is_file(),
        notes=[f"{shown_key(k)}: not a key of Harbor 0.26's task schema nor of tbflow's; ignored"
               for k in verdicts.unknown],
    )


def _refuse_verifier_image(path: Path, raw: dict) -> None:
    """In separate mode Harbor builds the verifier's image from ``tests/Dockerfile`` (or compose)
    when there is one, with the tests baked in; tbflow does not build that image yet, and running
    test.sh in the task's own image instead would judge with another toolchain than declared."""
    verifier = raw.get("verifier")
    if not isinstance(verifier, dict) or verifier.get("environment_mode") != "separate":
        return
    for name in ("Dockerfile", *COMPOSE_FILES):
        if (path / "tests" / name).exists():
            raise TaskFormatError(str(path / "tests" / name),
                                  "refused: a separate verifier's own image built from tests/ is not supported "
                                  "yet; tbflow would run test.sh in the task's environment image instead")


def _select(names: list[str], include: list[str], exclude: list[str]) -> list[str]:
    chosen = [n for n in names if not include or any(fnmatch.fnmatch(n, g) for g in include)]
    return [n for n in chosen if not any(fnmatch.fnmatch(n, g) for g in exclude)]


def load_dataset(
    root: Path,
    include: list[str] | None = None,
    exclude: list[str] | None = None,
    n_tasks: int | None = None,
) -> Dataset:
    """Load every task under ``root`` (sorted by name), filtered by glob and count.

    Raises ``InputError`` when the path is missing or holds no task at all; broken tasks are
    returned as problems instead.
    """
    root = Path(root)
    if not root.exists():
        raise InputError("DATASET", missing_dir_message(str(root)))
    if not root.is_dir():
        raise InputError("DATASET", f"{root} is not a directory")
    root = root.resolve()
    if looks_like_task(root):
        candidates = [root]
    else:
        candidates = sorted(
            (p for p in root.iterdir() if p.is_dir() and looks_like_task(p)), key=lambda p: p.name
        )
    if not candidates:
        raise InputError("DATASET", f"no tasks found in {root} (no task.toml in it or its subdirectories)")
    names = _select([p.name for p in candidates], include or [], exclude or [])
    if not names:
        raise InputError("--include/--exclude", f"no task in {root} matches the filters")
    if n_tasks is not None:
        names = names[:n_tasks]
    by_name = {p.name: p for p in candidates}
    tasks: list[Task] = []
    problems: list[TaskProblem] = []
    for name in names:
        try:
            tasks.append(load_task(by_name[name]))
        except TaskFormatError as exc:
            problems.append(TaskProblem(name=name, where=exc.where, message=exc.message))
    return Dataset(root=root, tasks=tasks, problems=problems)
