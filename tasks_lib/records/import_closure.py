"""The project files that can decide a verdict, derived from the code instead of listed by hand.

A hand-kept list of "judging" files (issue #29) missed 39 modules the trial flow imports: the
retry and disk-full rules in ``tasks_lib/errors.py``, the gateway's "reached the model" witness,
the task loader, the plug-in guard, the relay's C source. A change there resumed silently and
mixed two rules in one score. So the set is derived:

* the **Python modules** of the project's own packages (top-level directories of ``root`` with an
  ``__init__.py``) in the static import closure of the entry module: every ``import`` and
  ``from ... import`` anywhere in a module (also inside functions: tbflow imports lazily), their
  parent packages' ``__init__.py``, and ``from pkg import name`` when ``name`` is a submodule;
* the **non-Python files beside them**: every other file in the directory of a closure module and
  in its subdirectories that are not Python packages (the judge's C sources in
  ``tasks_lib/container/judge/``, ``tasks_lib/gateway/relay/relay.c``, shell preludes). Code reads
  such files relative to its own module, so this is where a file that decides a verdict lives.

Static, so nothing is imported (and nothing runs); the import statements are read from the text, in sorted order, so the
same tree gives the same list. Dynamic imports (``importlib.import_module(name)``) are not
followed: the harness adapters loaded that way have their own identity (``job_identity``).
"""

from __future__ import annotations

import re
from pathlib import Path

_SKIP_DIRS = {"__pycache__", ".pytest_cache"}
_SKIP_SUFFIXES = {".pyc", ".pyo"}


def _module_file(root: Path, name: str) -> Path | None:
    """The file of module ``name`` (dotted) under ``root``: ``a/b.py`` or ``a/b/__init__.py``."""
    base = root.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


#: ``import a.b, c as d`` and ``from .x import (y, z)`` at the start of a line; a regular expression,
#: not ``ast``: it is 20x cheaper and the identity is computed on every run and resume. An import
#: written in a docstring's first column counts too: a harmless extra file in the identity.
_IMPORT = re.compile(r"^[ \t]*import[ \t]+([\w. \t,]+)", re.M)
_FROM = re.compile(r"^[ \t]*from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)", re.M)


def imported_names(source: str, module: str, is_package: bool) -> list[str]:
    """Dotted names a module's ``import`` statements may load (the decision, no I/O)."""
    package = module if is_package else module.rpartition(".")[0]
    out: list[str] = []
    for m in _IMPORT.finditer(source):
        out += [part.split()[0] for part in m.group(1).split(",") if part.strip()]
    for m in _FROM.finditer(source):
        base, names = m.group(1), m.group(2).strip("() \t\n")
        level = len(base) - len(base.lstrip("."))
        if level:
            parts = package.split(".")
            anchor = ".".join(parts[:len(parts) - level + 1])
            base = f"{anchor}.{base[level:]}" if base[level:] else anchor
        out.append(base)
        out += [f"{base}.{n.split()[0]}" for n in names.replace("\\", " ").split(",") if n.strip() and n.strip() != "*"]
    return out


def _with_parents(name: str) -> list[str]:
    parts = name.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts) + 1)]


def python_closure(root: Path, entry: str) -> list[Path]:
    """The files of the project modules ``entry`` imports, directly or not (``entry`` included)."""
    own = {p.name for p in root.iterdir() if (p / "__init__.py").is_file()}
    seen: dict[str, Path] = {}
    todo = _with_parents(entry)
    while todo:
        name = todo.pop()
        if name in seen or name.split(".")[0] not in own:
            continue
        path = _module_file(root, name)
        if path is None:
            continue  # ``from pkg import function``: not a module
        seen[name] = path
        source = path.read_text(encoding="utf-8", errors="replace")
        for imported in imported_names(source, name, path.name == "__init__.py"):
            todo += _with_parents(imported)
    return sorted(set(seen.values()))


def data_files_beside(directories: set[Path]) -> list[Path]:
    """Every non-Python file in ``directories`` and in their subdirectories that are not packages."""
    out: list[Path] = []
    for d in sorted(directories):
        for p in sorted(d.iterdir()):
            if p.name in _SKIP_DIRS or p.is_symlink():
                continue
            if p.is_dir() and not (p / "__init__.py").exists():
                out += [f for f in sorted(p.rglob("*")) if f.is_file() and not _SKIP_DIRS.intersection(f.parts)
                        and f.suffix not in _SKIP_SUFFIXES]
            elif p.is_file() and p.suffix not in (".py", *_SKIP_SUFFIXES):
                out.append(p)
    return out


def verdict_sources(root: Path, entry: str = "flows.trial_flow") -> list[str]:
    """Paths relative to ``root`` (posix, sorted) of every file that can decide a verdict."""
    modules = python_closure(root.resolve(), entry)
    files = set(modules) | set(data_files_beside({m.parent for m in modules}))
    return sorted(f.relative_to(root.resolve()).as_posix() for f in files)
