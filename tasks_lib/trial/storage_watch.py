"""``[environment] storage_mb`` held during the agent stage where the engine has no quota for it.

Where the storage driver has a quota (``trial_limits``: btrfs, zfs, overlay2 on xfs with
``pquota``) the engine holds it and the agent meets ENOSPC. Elsewhere (overlay2 on ext4, this kind
of host) tbflow measures the writable layer while the agent runs: every ``POLL_SEC`` at most, and
never more than a twentieth of a core (the next walk waits ``COST_FACTOR`` times the last one's time),
once more when the agent ended. An agent past the bound is stopped at once (its sessions killed, as
at its deadline) and the trial is its result: scored 0, flagged ``broke-container``, with
``storage.txt`` (the bound, what was measured, the largest files) as evidence. The bound is the
task's, so passing it is the agent's doing whatever else happened; the job goes on.

What it does not hold (docs/limits.md): a burst between two walks can pass the bound by what the
agent writes in that time (hundreds of MB on a fast disk; it is still stopped); processes the
agent detached from its sessions are not killed (as at a deadline), and what they write after the
agent stage is not counted.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Literal

from tasks_lib.container.layer_usage import LayerUsage, layer_usage
from tasks_lib.container.writable_layer import WritableLayer
from tasks_lib.container.sandbox import Sandbox
from tasks_lib.errors import ContainerError
from tasks_lib.records.record_models import StorageCount, TrialFlag
from tasks_lib.text_clean import escaped_name

STAGE = "run-agent"
POLL_SEC = 0.25
COST_FACTOR = 20
EVIDENCE = "storage.txt"
MB = 1024 * 1024


def over_bound(usage: LayerUsage, storage_mb: int) -> bool:
    """Whether a walk shows the layer past ``storage_mb`` (pure). A layer with more entries than a
    walk reads is past any bound a task states in MB (a million files or more)."""
    return usage.capped or usage.bytes > storage_mb * MB


def exceeded_message(usage: LayerUsage, storage_mb: int, after_sec: float) -> str:
    """The flag's message (pure)."""
    held = f"more than {usage.entries} files" if usage.capped else f"{usage.bytes // MB} MB"
    return (f"the agent wrote {held} into its container's writable layer, over the task's storage_mb of "
            f"{storage_mb} MB ({after_sec:.0f} s into the agent stage); tbflow stopped it")


class StorageWatch:
    """Measures one trial container's writable layer against ``storage_mb`` while the agent runs."""

    def __init__(self, sandbox: Sandbox, storage_mb: int | None) -> None:
        self.sandbox, self.storage_mb = sandbox, storage_mb
        self.exceeded: LayerUsage | None = None
        self.after_sec = 0.0
        self.problem: str | None = None
        self.last: LayerUsage | None = None
        self.quota = False
        self._upper: str | None = None

    def _measure(self) -> LayerUsage | None:
        try:
            self.last = layer_usage(self._upper) if self._upper else None
        except OSError as exc:  # the container is gone: the stages after this one say why
            self.problem = f"the writable layer could not be read: {exc}"
        return self.last

    def count(self) -> StorageCount | None:
        """What the record says about the bound (None: the task set none)."""
        if not self.storage_mb:
            return None
        held: Literal["engine-quota", "watch", "none"] = "engine-quota" if self.quota else \
            "watch" if self._upper else "none"
        return StorageCount(storage_mb=self.storage_mb, held_by=held, exceeded=self.exceeded is not None,
                            used_bytes=self.last.bytes if self.last else None,
                            entries=self.last.entries if self.last else None, problem=self.problem)

    def _check(self, began: float) -> bool:
        usage = self._measure()
        if usage is not None and self.storage_mb and over_bound(usage, self.storage_mb):
            self.exceeded, self.after_sec = usage, time.monotonic() - began
            return True
        return False

    @contextmanager
    def running(self, stop_agent: Callable[[], None]) -> Iterator[None]:
        """Watch while the body runs; call ``stop_agent`` (from the watch's thread) once the layer
        passes the bound; measure once more when the body ends."""
        if not self.storage_mb or not self._find_upper():
            yield
            return
        began, done = time.monotonic(), threading.Event()

        def watch() -> None:
            while not done.is_set():
                start = time.monotonic()
                if self._check(began):
                    stop_agent()
                    return
                done.wait(max(POLL_SEC, COST_FACTOR * (time.monotonic() - start)))

        thread = threading.Thread(target=watch, name="storage-watch", daemon=True)
        thread.start()
        try:
            yield
        finally:
            done.set()
            thread.join()
            if self.exceeded is None:
                self._check(began)

    def _find_upper(self) -> bool:
        try:
            info = self.sandbox.inspect(STAGE)
        except ContainerError as exc:
            self.problem = exc.message
            return False
        self.quota = "size" in ((info.get("HostConfig") or {}).get("StorageOpt") or {})
        upper = WritableLayer.of(self.sandbox.name, info).upper  # None: not readable here
        if upper is None:
            self.problem = ("storage_mb is not held: the container's writable layer cannot be read here (a remote "
                            "engine, tbflow not running as root, or a driver other than overlay2)")
            return False
        self._upper = upper
        return True

    def flag(self, trial_dir: Path) -> TrialFlag | None:
        """The agent's result when it passed the bound (its evidence written), else None."""
        if self.exceeded is None or not self.storage_mb:
            return None
        u = self.exceeded
        lines = [f"the task's storage_mb: {self.storage_mb} MB ({self.storage_mb * MB} bytes)",
                 f"the container's writable layer, as allocated on the host's disk: {u.bytes} bytes in "
                 f"{u.entries} entries{' (walk capped: more entries than that)' if u.capped else ''}",
                 f"measured {self.after_sec:.1f} s into the agent stage, from the host (the overlay's upper directory)",
                 "the largest files (allocated bytes, path in the container):",
                 *(f"  {size} {escaped_name(path)}" for size, path in u.largest)]  # the agent's names: any bytes
        (trial_dir / EVIDENCE).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return TrialFlag(kind="broke-container", evidence=EVIDENCE,
                         message=exceeded_message(u, self.storage_mb, self.after_sec))
