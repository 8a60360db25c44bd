"""The record of what a trial collected from the agent's container after the agent phase.

``ArtifactEntry`` is a row of the trial's ``artifacts/manifest.json``: Harbor's own
``ArtifactManifestEntry`` fields first (so Harbor's viewer, export and regrade read it), then
tbflow's (``problem``, ``skipped``), which Harbor's model ignores. ``CollectRun`` is how one
``[[verifier.collect]]`` hook ended: hooks are best effort in Harbor, so an ending other than 0 is
recorded and shown, never fatal.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from tasks_lib.text_clean import ContainerText


class ArtifactEntry(BaseModel):
    source: str
    destination: str
    type: Literal["file", "directory"]
    status: Literal["ok", "failed", "empty", "skipped"]
    service: str | None = None
    exclude: list[str] | None = None
    #: why the entry failed or was skipped
    problem: ContainerText | None = None
    #: members left out as unsafe (links leaving the artifact, devices, fifos), names escaped
    skipped: list[ContainerText] = Field(default_factory=list)


class CollectRun(BaseModel):
    command: str
    #: None: it did not end within its ``timeout_sec`` (or could not be started: ``problem``)
    exit_code: int | None = None
    timed_out: bool = False
    problem: ContainerText | None = None
