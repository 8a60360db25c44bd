"""Reading a registry file in Harbor's format and finding a dataset version in it.

The format is Harbor's legacy ``registry.json``: a JSON array of datasets, each with ``name``,
``version``, ``description`` and ``tasks`` (``name``, ``path``, optional ``git_url`` and
``git_commit_id``; a task without ``git_url`` is a directory relative to a local registry file).
The registry is read from a path, a ``file://`` URL or an ``http(s)://`` URL; a directory means
its ``registry.json`` (a store directory, see ``packages.py``). The default is
``$TBFLOW_REGISTRY``, else Harbor's own file on GitHub.

A registry that cannot be read or parsed is bad input naming it (one line, exit 2): nothing is
fetched or cached from it.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from urllib.parse import unquote, urlparse

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError

from tasks_lib.dataset.names import pick_version, version_order
from tasks_lib.errors import InputError

REGISTRY_ENV = "TBFLOW_REGISTRY"
HARBOR_REGISTRY = "https://raw.githubusercontent.com/harbor-framework/harbor/main/registry.json"
REGISTRY_FILE = "registry.json"
HTTP_TIMEOUT_SEC = 30


class RegistryTask(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    path: str
    git_url: str | None = None
    git_commit_id: str | None = None


class RegistryDataset(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    version: str
    description: str = ""
    tasks: list[RegistryTask]


def registry_location(flag: str | None) -> str:
    """The registry to use: the ``--registry`` value, else ``$TBFLOW_REGISTRY``, else Harbor's."""
    return flag or os.environ.get(REGISTRY_ENV) or HARBOR_REGISTRY


def local_path(location: str) -> Path | None:
    """The local path of a plain path or ``file://`` URL; None for a remote URL."""
    parsed = urlparse(location)
    if parsed.scheme == "file":
        return Path(unquote(parsed.path))
    if parsed.scheme in ("http", "https"):
        return None
    return Path(location).expanduser()


def canonical(location: str) -> str:
    """One spelling per registry (an absolute path for local ones), to key cache entries by."""
    path = local_path(location)
    return str(path.resolve()) if path is not None else location


def _read_text(location: str) -> str:
    path = local_path(location)
    try:
        if path is None:
            import httpx

            resp = httpx.get(location, timeout=HTTP_TIMEOUT_SEC, follow_redirects=True)
            resp.raise_for_status()
            return resp.text
        if path.is_dir():
            path = path / REGISTRY_FILE
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError("--registry", f"{location}: cannot read the registry: {exc}") from exc
    except Exception as exc:  # httpx errors: no network, DNS, HTTP status
        raise InputError("--registry", f"{location}: cannot read the registry: {type(exc).__name__}: {exc}") from exc


def read_registry(location: str) -> list[RegistryDataset]:
    """Every dataset of the registry at ``location`` (``InputError`` naming it when unreadable)."""
    text = _read_text(location)
    try:
        return TypeAdapter(list[RegistryDataset]).validate_python(json.loads(text))
    except json.JSONDecodeError as exc:
        raise InputError("--registry", f"{location}: not a registry (invalid JSON: {exc})") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err["loc"])
        raise InputError("--registry", f"{location}: not a registry file in Harbor's format: {where}: "
                                       f"{err['msg']}") from exc


def offered(datasets: list[RegistryDataset]) -> dict[str, list[str]]:
    """Dataset name → its versions (display order)."""
    out: dict[str, list[str]] = {}
    for d in datasets:
        out.setdefault(d.name, []).append(d.version)
    return {name: version_order(vs) for name, vs in sorted(out.items())}


def _listing(by_name: dict[str, list[str]]) -> str:
    return "; ".join(f"{n} ({', '.join(vs)})" for n, vs in by_name.items()) or "no datasets"


def find_dataset(datasets: list[RegistryDataset], name: str, version: str | None, location: str) -> RegistryDataset:
    """The entry ``name@version`` (no version: head, else the highest); ``InputError`` listing what exists."""
    by_name = offered(datasets)
    if name not in by_name:
        raise InputError("DATASET", f"{name}: not a directory, and no dataset of that name in the registry "
                                    f"{location}; it has: {_listing(by_name)}")
    chosen = version or pick_version(by_name[name])
    for d in datasets:
        if d.name == name and d.version == chosen:
            return d
    raise InputError("DATASET", f"{name}@{chosen}: the registry {location} has no version {chosen!r} of {name}; "
                                f"versions: {', '.join(by_name[name])}")
