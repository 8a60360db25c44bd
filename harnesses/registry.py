"""Harness references → adapters: the built-ins, then the plug-in forms, in that order.

``--harness NAME`` (and the deployment parameter ``harnesses``) is resolved by ``RESOLVERS``, first
match wins: the built-ins (so an installed plug-in can never change what ``codex`` means; two of
them, qwen-code and gemini-cli, are declarative files shipped in ``harnesses/declared/``), a
declarative harness file ``path/file.toml`` (``harnesses/declared``), the ``tbflow.harnesses``
entry points of installed distributions, ``module:Class``, then ``path/file.py:Class``
(``harnesses/plugins.py``). A reference that none resolves is an ``InputError`` on ``--harness``
listing what each form said, in one line (the CLI exits 2); a ``.toml`` file that is not a valid
harness file is one at once, naming the file and the field.

Resolution is cached per process and reference, so every trial of a job uses the same class
objects; a command is a new process, so an edited or newly installed plug-in is seen by the next
command.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from harnesses.plugins import (ENTRY_POINT_GROUP, Resolved, from_declared, from_entry_point, from_file,
                               from_module, harness_entry_points)
from tasks_lib.errors import InputError
from tasks_lib.records.harness_source import HarnessSource
from tasks_lib.trial.harness_api import Harness

#: a resolver gives the harness a reference names, a phrase saying why it does not, or None when the
#: reference is not of its form at all (a plain name is never tried as an import path, nor the reverse)
Resolver = Callable[[str], "Resolved | str | None"]


#: the built-in adapters by name, each imported only when a job names it: importing all of them
#: (the CLIs' adapters, tbflow-agent's loop and its HTTP client) cost ~0.1 s of every command's
#: start, ~3 % of a cold 3-trial job (bench/RESULTS.md, "Cold start")
_BUILTIN_CLASSES = {
    "oracle": ("harnesses.reference", "OracleHarness"),
    "nop": ("harnesses.reference", "NopHarness"),
    "codex": ("harnesses.cli.codex", "CodexHarness"),
    "opencode": ("harnesses.cli.opencode", "OpencodeHarness"),
    "pi": ("harnesses.cli.pi", "PiHarness"),
    "claude-code": ("harnesses.cli.claude_code", "ClaudeCodeHarness"),
    "tbflow-agent": ("harnesses.tbflow_agent.harness", "TbflowAgentHarness"),
}


def _shipped() -> Mapping[str, type[Harness]]:
    """The declarative harnesses shipped in ``harnesses/declared/`` (qwen-code, gemini-cli)."""
    from harnesses.declared.declared_harness import shipped

    return shipped()


def _builtin(name: str) -> type[Harness] | None:
    if name in _BUILTIN_CLASSES:
        module, cls = _BUILTIN_CLASSES[name]
        return getattr(importlib.import_module(module), cls)
    return _shipped().get(name)


def _is_builtin(name: str) -> bool:
    return name in _BUILTIN_CLASSES or name in _shipped()


#: the reference forms besides a name, as the help and ``tbflow harnesses`` say them
OTHER_FORMS = "path/file.toml (a declarative harness), module:Class or path/file.py:Class"


def builtin_names() -> list[str]:
    return sorted({*_BUILTIN_CLASSES, *_shipped()})


def from_builtins(ref: str) -> Resolved | str | None:
    if ":" in ref:
        return None
    cls = _builtin(ref)
    if cls is None:
        return f"built-ins: not one of {', '.join(builtin_names())}"
    return Resolved(key=ref, cls=cls, source=HarnessSource(origin="built-in", reference=ref,
                                                           target=f"{cls.__module__}:{cls.__qualname__}"))


RESOLVERS: list[Resolver] = [from_builtins, from_declared, from_entry_point, from_module, from_file]
_cache: dict[str, Resolved] = {}


def resolve_harness(ref: str) -> Resolved:
    """The harness ``ref`` names (``InputError`` on ``--harness`` when nothing does)."""
    if ref in _cache:
        return _cache[ref]
    tried: list[str] = []
    for resolver in RESOLVERS:
        got = resolver(ref)
        if got is None:
            continue
        if isinstance(got, Resolved):
            refused = _check_key(got)
            if refused is None:
                _cache[ref] = got
                return got
            got = refused
        tried.append(got)
    if ":" not in ref:
        tried.append("module:Class, path/file.py:Class: not an import path (no ':'); "
                     "path/file.toml: not a .toml file")
    raise InputError("--harness", f"cannot use harness {ref!r}: tried " + "; ".join(tried))


def _check_key(got: Resolved) -> str | None:
    """A plug-in may not take a built-in's key: reports and trial ids would not tell them apart."""
    if got.source.origin != "built-in" and _is_builtin(got.key):
        return (f"{got.source.reference}: its name {got.key!r} is a built-in harness's; give the class "
                "another name")
    return None


def get_harness(ref: str) -> Harness:
    """A new instance of the harness ``ref`` names."""
    got = resolve_harness(ref)
    try:
        return got.cls()
    except Exception as exc:  # noqa: BLE001 - a plug-in's constructor is the plug-in's code
        raise InputError("--harness", f"cannot use harness {ref!r}: creating {got.source.target}() failed: "
                         f"{type(exc).__name__}: {exc}") from exc


def available_names() -> list[str]:
    """The names a job can use without an import path: built-ins, then installed entry points
    (not loaded: this is cheap, and it is what the deployment's schema enumerates)."""
    names = builtin_names()
    return names + sorted(n for n in harness_entry_points() if n not in names)


@dataclass(frozen=True)
class Listing:
    """One row of ``tbflow harnesses``: a loaded harness, or the problem of one that is not."""

    name: str
    kind: str
    version: str
    origin: str
    problem: str | None = None


def listings() -> list[Listing]:
    """Every built-in and every installed entry point, loaded, with where it comes from."""
    out: list[Listing] = []
    for name in builtin_names():
        h = get_harness(name)
        out.append(Listing(name, h.kind, h.version, "built-in"))
    shadowed = set(builtin_names())
    for name, ep in sorted(harness_entry_points().items()):
        dist = f"{ep.dist.name}=={ep.dist.version}" if ep.dist else "unknown distribution"
        if name in shadowed:
            out.append(Listing(name, "-", "-", f"entry point {dist}", problem="shadowed by the built-in"))
            continue
        try:
            h = get_harness(name)
        except InputError as exc:
            out.append(Listing(name, "-", "-", f"entry point {dist}", problem=exc.message))
            continue
        out.append(Listing(name, h.kind, h.version, f"entry point {dist}"))
    return out


__all__ = ["ENTRY_POINT_GROUP", "OTHER_FORMS", "RESOLVERS", "Resolved", "available_names", "builtin_names", "get_harness",
           "listings", "resolve_harness"]
