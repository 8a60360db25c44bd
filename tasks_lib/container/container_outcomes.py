"""What container operations report: the processes seen and killed, and how ``/logs`` came out.

They are parts of the persisted trial record (tasks_lib/records/record_models.py), defined here so
the container layer, the bottom of tasks_lib (docs/architecture.md), imports nothing above it.
"""

from __future__ import annotations

from pydantic import BaseModel, Field

from tasks_lib.text_clean import ContainerText


class ProcessInfo(BaseModel):
    """One process seen in the container (from ``/proc``)."""

    pid: int
    sid: int
    command: ContainerText


class SkippedLogEntry(BaseModel):
    """An entry of ``/logs`` that was not copied out: the agent controls that dir, so a link
    leaving it, a device or a FIFO is skipped and listed here, never fatal."""

    path: ContainerText
    reason: ContainerText


class CutLogFile(BaseModel):
    """A log file longer than the cap: only its first ``kept_bytes`` were kept."""

    path: ContainerText
    size_bytes: int
    kept_bytes: int


class DroppedLogs(BaseModel):
    """Entries of one log dir not copied because the dir's budget (files or bytes) was spent."""

    dir: str
    entries: int = 0
    bytes: int = 0
    reason: str


#: at most this many ``skipped``/``cut`` entries are listed one by one; the rest are counted
LISTED_LOG_ENTRIES = 100


class LogsOutcome(BaseModel):
    """How ``/logs`` (agent and verifier logs) came out of the container. Paths are trial-relative.

    Each dir (``agent/``, ``verifier/``) has its own budget of files and bytes, so an agent that
    writes a million files or many capped ones leaves a bounded trial dir and a bounded record,
    and cannot crowd the verifier's output out."""

    max_file_bytes: int
    max_files: int | None = None
    max_dir_bytes: int | None = None
    skipped: list[SkippedLogEntry] = Field(default_factory=list)
    cut: list[CutLogFile] = Field(default_factory=list)
    #: ``skipped``/``cut`` entries beyond the first ``LISTED_LOG_ENTRIES``, counted only
    skipped_unlisted: int = 0
    cut_unlisted: int = 0
    dropped: list[DroppedLogs] = Field(default_factory=list)

    def skip(self, entry: SkippedLogEntry) -> None:
        if len(self.skipped) < LISTED_LOG_ENTRIES:
            self.skipped.append(entry)
        else:
            self.skipped_unlisted += 1

    def note_cut(self, entry: CutLogFile) -> None:
        if len(self.cut) < LISTED_LOG_ENTRIES:
            self.cut.append(entry)
        else:
            self.cut_unlisted += 1
