"""Harnesses tbflow does not ship: installed entry points, ``module:Class`` and ``path/file.py:Class``.

Each form is one resolver: it returns a ``Resolved`` harness, or a short phrase saying what it
tried and why that did not give a harness, which ``harnesses/registry.py`` joins into the one-line
error of a name nothing resolves. The forms cannot be confused with each other: a plain name (no
``:``) is a built-in or an entry point, ``X.py:Class`` a file, any other ``X:Class`` a module, and
a reference ending in ``.toml`` (no ``:``) a declarative harness file (``harnesses/declared``).

A plug-in's key in the job (trial ids ``<task>.<key>.<attempt>``, tags, reports) is its entry-point
name, or for the import forms the class's own ``name``: a path or a dotted module cannot be part of
a directory or container name.
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from importlib.metadata import EntryPoint, entry_points
from pathlib import Path
from types import ModuleType
from typing import Literal

from tasks_lib.records.harness_source import HarnessSource
from tasks_lib.text_clean import one_line
from tasks_lib.trial.harness_api import Harness

ENTRY_POINT_GROUP = "tbflow.harnesses"
#: a harness key: it becomes part of trial ids, trial dirs, container names and Prefect tags
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$")
#: the two import forms, ``module:Class`` and ``path/file.py:Class`` (the deployment schema's pattern)
IMPORT_PATTERN = r"^[^:\s][^:]*:[A-Za-z_][A-Za-z0-9_]*$"
#: a declarative harness file, ``path/file.toml`` (the deployment schema admits it too)
DECLARED_PATTERN = r"^[^:\s][^:]*\.toml$"
_MODULE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")


@dataclass(frozen=True)
class Resolved:
    """A harness class found for a reference, its key in the job and where it came from."""

    key: str
    cls: type[Harness]
    source: HarnessSource


def harness_entry_points() -> dict[str, EntryPoint]:
    """The installed ``tbflow.harnesses`` entry points whose name can be a harness key."""
    return {ep.name: ep for ep in entry_points(group=ENTRY_POINT_GROUP) if NAME_PATTERN.match(ep.name)}


def check_class(obj: object, what: str) -> type[Harness] | str:
    """``obj`` if it is a concrete ``Harness`` subclass, else why not."""
    if not isinstance(obj, type) or not issubclass(obj, Harness):
        return f"{what} is not a tbflow Harness subclass (tasks_lib.trial.harness_api.Harness)"
    if getattr(obj, "__abstractmethods__", None):
        return f"{what} is abstract (missing {', '.join(sorted(obj.__abstractmethods__))})"
    return obj


def _failed(what: str, exc: BaseException) -> str:
    return one_line(f"{what} failed: {type(exc).__name__}: {exc}", 300)


def from_entry_point(ref: str) -> Resolved | str | None:
    if ":" in ref:
        return None
    eps = harness_entry_points()
    ep = eps.get(ref)
    if ep is None:
        return f"entry points of {ENTRY_POINT_GROUP}: none named so (installed: {', '.join(sorted(eps)) or 'none'})"
    where = f"entry point {ref} ({ep.value})"
    try:
        obj = ep.load()
    except Exception as exc:  # noqa: BLE001 - any import error of the plug-in is reported, one line
        return _failed(f"entry points of {ENTRY_POINT_GROUP}: loading {where}", exc)
    cls = check_class(obj, where)
    if isinstance(cls, str):
        return f"entry points of {ENTRY_POINT_GROUP}: {cls}"
    dist = ep.dist
    source = HarnessSource(origin="entry-point", reference=ref, target=ep.value.replace(" ", ""),
                           distribution=dist.name if dist else None,
                           distribution_version=dist.version if dist else None)
    return Resolved(key=ref, cls=cls, source=source)


def from_module(ref: str) -> Resolved | str | None:
    module_name, colon, attr = ref.partition(":")
    if not colon or module_name.endswith(".py"):
        return None
    if not _MODULE.match(module_name):
        return f"module:Class, path/file.py:Class: {module_name!r} is neither a module name nor a .py file"
    return _import_form(ref, "module", f"module {module_name!r}", lambda: importlib.import_module(module_name),
                        f"{module_name}:{attr}")


def is_declared_ref(ref: str) -> bool:
    return ref.endswith(".toml") and ":" not in ref


def from_declared(ref: str) -> Resolved | str | None:
    """A declarative harness file. A file that does not load raises ``InputError`` naming the file
    and the field (not a phrase among the other forms': the reader asked for that file)."""
    if not is_declared_ref(ref):
        return None
    from harnesses.declared.declared_harness import declared_class

    path = Path(ref).expanduser()
    if not path.is_file():
        return f"path/file.toml: no file {path.resolve()}"
    cls = declared_class(path, ref)
    return Resolved(key=cls.name, cls=cls, source=HarnessSource(origin="declared", reference=ref,
                                                                target=path.name))


def from_file(ref: str) -> Resolved | str | None:
    path_text, _, attr = ref.rpartition(":")
    if not path_text.endswith(".py"):
        return None
    path = Path(path_text).expanduser().resolve()
    if not path.is_file():
        return f"path/file.py:Class: no file {path}"
    return _import_form(ref, "file", path_text, lambda: _load_file(path), f"{path.name}:{attr}")


def _import_form(ref: str, origin: Literal["module", "file"], what: str, load: Callable[[], ModuleType],
                 target: str) -> Resolved | str:
    """The class ``ref`` names in what ``load`` imports, or what went wrong, prefixed by the form."""
    form = "module:Class" if origin == "module" else "path/file.py:Class"
    attr = ref.rpartition(":")[2]
    try:
        module = load()
    except Exception as exc:  # noqa: BLE001 - any error of the plug-in's import is reported, one line
        return _failed(f"{form}: importing {what}", exc)
    cls = check_class(getattr(module, attr, None), ref)
    if isinstance(cls, str):
        return f"{form}: {f'{what} has no {attr!r}' if not hasattr(module, attr) else cls}"
    return _by_name(cls, HarnessSource(origin=origin, reference=ref, target=target))


def _load_file(path: Path):
    """Import one file as a module of its own, once per process and path (so its classes stay the
    same objects for every trial of the job)."""
    name = f"_tbflow_harness_file_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}_{path.stem}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot import {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def _by_name(cls: type[Harness], source: HarnessSource) -> Resolved | str:
    """An import form is keyed by the class's ``name``, which must be a valid key."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        return (f"{source.reference}: its name {name!r} cannot key trials (letters, digits, '_' or '-', "
                "max 64, starting with a letter or digit)")
    return Resolved(key=name, cls=cls, source=source)
