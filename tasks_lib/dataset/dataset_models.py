"""What tbflow persists about a named dataset: the pins of its tasks.

``DatasetSource`` goes into ``job.json`` (so a report says which version of which task ran) and,
reduced to what decides results, into the job identity. The cache manifest adds each file's hash
so a changed cached task is reported by the file that changed.
"""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field

DatasetKind = Literal["registry", "package"]


class TaskPin(BaseModel):
    """One task of a named dataset: where it came from and its content digest."""

    name: str = Field(description="The task's directory name in the resolved dataset.")
    path: str = Field(description="Its path in the git repository or the store it came from.")
    git_url: str | None = Field(default=None, description="None for a task from a local directory.")
    commit: str | None = Field(default=None, description="The full commit SHA it was fetched at.")
    digest: str = Field(description="Harbor's task content digest, sha256:<hex>.")


class DatasetSource(BaseModel):
    """A dataset given by name, as resolved for a job."""

    spec: str = Field(description="The name as given: name@version or org/name@ref.")
    kind: DatasetKind
    name: str
    version: str = Field(description="The registry version, or the package ref.")
    source: str = Field(description="Where it was resolved: the registry file or URL, the store directory or "
                                    "the git repository.")
    commit: str | None = Field(default=None, description="The commit every task was fetched at (None when they "
                                                         "differ or come from a directory).")
    digest: str = Field(description="Harbor's dataset digest over the task digests, sha256:<hex>.")
    tasks: list[TaskPin]

    @property
    def pinned_spec(self) -> str:
        """``name@version``: what resolves to this very dataset again (a resume, a shard)."""
        return f"{self.name}@{self.version}"


class CacheManifest(BaseModel):
    """``manifest.json`` of a cache entry; written last, so an entry without it is not one."""

    source: DatasetSource
    fetched_at: datetime
    #: per task name: every file's sha256 at fetch (relative path → hex), to name what changed
    files: dict[str, dict[str, str]]
