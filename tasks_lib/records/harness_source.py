"""Where a harness came from, as trial records and the job identity keep it.

A job may run harnesses tbflow does not ship (plug-ins: an installed entry point, ``module:Class``,
``path/file.py:Class``, or a declarative harness file ``path/file.toml``). A reader of
``trial.json`` must be able to tell which code produced the trial, and a resume must be able to
tell whether it is still the same code, on any machine: so the
record says how the harness was named and what it resolved to, and the identity keeps only the
parts that do not depend on where the plug-in sits on disk (``portable``).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel

HarnessOrigin = Literal["built-in", "entry-point", "module", "file", "declared"]


class HarnessSource(BaseModel):
    """How one harness of a job was found (``harnesses/registry.py`` resolves the name)."""

    origin: HarnessOrigin
    #: what the job asked for, as given: a name, ``module:Class``, ``path/file.py:Class`` or ``path/file.toml``
    reference: str
    #: the class, as ``module:Class`` (a file plug-in's as ``file.py:Class``, a declared harness's as
    #: its file's name ``file.toml``, without their directory)
    target: str
    #: the installed distribution that declared the entry point, and its version
    distribution: str | None = None
    distribution_version: str | None = None

    def portable(self) -> str:
        """What the job identity keeps: never a path, so another machine's copy compares equal."""
        if self.origin == "entry-point":
            return f"entry point {self.reference} of {self.distribution}=={self.distribution_version} ({self.target})"
        return f"{self.origin} {self.target}"

    def describe(self) -> str:
        """One short phrase for listings: ``built-in``, ``entry point dist==1.0``, ``module m:C``, ``file x.py:C``."""
        if self.origin == "entry-point":
            return f"entry point {self.distribution}=={self.distribution_version}"
        if self.origin == "built-in":
            return "built-in"
        return f"{self.origin} {self.reference if self.origin in ('file', 'declared') else self.target}"
