"""What a ``DATASET`` argument means: a directory, ``name[@version]`` or ``org/name[@ref]``.

A path that exists, or is written as one (starting with ``/``, ``.`` or ``~``, or under a directory
that exists here, as ``examples/taskz``: ``tasks_lib/path_hint.py``), is a directory as
before. Otherwise a word with no ``/`` is a registry dataset (Harbor's ``-d name@version``) and
``org/name`` a package dataset, as in Harbor. Without a version a registry name means ``head``
when the registry has it, else the highest version (PEP 440 order, else lexical), as Harbor's
``resolve_version`` does; a package without a ref means ``latest``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Literal

from packaging.version import InvalidVersion, Version
from pydantic import BaseModel

from tasks_lib.path_hint import meant_as_path

PART = r"[A-Za-z0-9][A-Za-z0-9._-]*"
REF = r"[A-Za-z0-9][A-Za-z0-9._+:-]*"
REGISTRY_NAME = re.compile(rf"^(?P<name>{PART})(?:@(?P<version>{REF}))?$")
PACKAGE_NAME = re.compile(rf"^(?P<org>{PART})/(?P<name>{PART})(?:@(?P<version>{REF}))?$")
DEFAULT_PACKAGE_REF = "latest"


class DatasetName(BaseModel):
    """A parsed ``DATASET`` argument. ``version`` None: not given (pick one from the registry)."""

    kind: Literal["dir", "registry", "package"]
    text: str
    name: str = ""
    version: str | None = None

    @property
    def label(self) -> str:
        return f"{self.name}@{self.version}" if self.version else self.name


def parse_dataset(text: str) -> DatasetName:
    """Classify ``text``; a directory wins over a name that happens to look the same."""
    if text.startswith(("/", ".", "~")) or Path(text).exists() or meant_as_path(text):
        return DatasetName(kind="dir", text=text)
    if m := REGISTRY_NAME.match(text):
        return DatasetName(kind="registry", text=text, name=m["name"], version=m["version"])
    if m := PACKAGE_NAME.match(text):
        return DatasetName(kind="package", text=text, name=f"{m['org']}/{m['name']}",
                           version=m["version"] or DEFAULT_PACKAGE_REF)
    return DatasetName(kind="dir", text=text)


def pick_version(versions: list[str]) -> str:
    """``head`` if present, else the highest PEP 440 version, else the lexically last (Harbor's rule)."""
    if "head" in versions:
        return "head"
    parsed: list[tuple[Version, str]] = []
    for v in versions:
        try:
            parsed.append((Version(v), v))
        except InvalidVersion:
            continue
    if parsed:
        return max(parsed)[1]
    return sorted(versions)[-1]


def version_order(versions: list[str]) -> list[str]:
    """``versions`` sorted for display: PEP 440 ones by value, the others after them by name."""
    def key(v: str) -> tuple:
        try:
            return (0, Version(v), "")
        except InvalidVersion:
            return (1, Version("0"), v)
    return sorted(set(versions), key=key)
