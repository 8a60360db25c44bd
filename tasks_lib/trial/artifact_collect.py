"""Collect a trial's artifacts from the agent's container, and put them into a verifier's.

After the agent phase (cut-off work already killed), the task's ``[[verifier.collect]]`` hooks run
in the agent's container, in order, each under its own timeout and best effort, as in Harbor: a
hook that fails is recorded, the trial goes on. Then every artifact (``artifact_plan.collected``)
is copied into the trial's ``artifacts/`` and ``artifacts/manifest.json`` is written in Harbor's
format. Nothing here can make the trial invalid: what the container holds is the agent's doing, so
a missing, oversized or unsafe artifact is a ``failed`` row of the manifest (the verifier then sees
it absent), and only the engine failing (``ContainerError``/``TransferError`` that are not the
agent's) stops the stage.

``restore`` puts the recorded copies back, each at its ``source``, into a separate verifier's fresh
container; an entry that was not collected whole stays absent there.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

from tasks_lib.container.artifact_copy import copy_out, pack_artifacts
from tasks_lib.container.sandbox import Sandbox
from tasks_lib.errors import DownloadBoundExceeded, TransferError
from tasks_lib.records.artifact_record import ArtifactEntry, CollectRun
from tasks_lib.task.task_model import ArtifactSpec, CollectHook, Task
from tasks_lib.text_clean import escaped_name
from tasks_lib.trial.task_command import CommandContext, run_task_command
from tasks_lib.trial.artifact_plan import (COPY_TIMEOUT_SEC, MANIFEST, MAX_ARTIFACT_BYTES, collected, excluded,
                                           host_relative, overlapping)

ARTIFACTS_DIR = "artifacts"
COLLECT_LOG = "collect.log"
#: output of a hook kept in collect.log (the rest is cut: the agent's binaries run the hook)
HOOK_OUTPUT_CHARS = 8192


def run_hooks(sandbox: Sandbox, hooks: list[CollectHook], ctx: CommandContext, trial_dir: Path,
              stage: str) -> list[CollectRun]:
    """Each hook with ``sh -c`` in the container's working directory, as Harbor's exec does."""
    runs: list[CollectRun] = []
    log: list[str] = []
    for hook in hooks:
        code, output = run_task_command(sandbox, ctx, hook.command, hook.timeout_sec, stage, user=hook.user)
        runs.append(CollectRun(command=hook.command, exit_code=code, timed_out=code is None))
        log += [f"$ {hook.command}", output[-HOOK_OUTPUT_CHARS:],
                f"[exit {code}]" if code is not None else f"[did not end within {hook.timeout_sec:g} s]", ""]
    if hooks:
        (trial_dir / COLLECT_LOG).write_text("\n".join(log), encoding="utf-8", errors="backslashreplace")
    return runs


def collect(sandbox: Sandbox, task: Task, trial_dir: Path, stage: str) -> list[ArtifactEntry]:
    """Copy every artifact into ``trial_dir/artifacts`` and write the manifest (Harbor's order)."""
    entries = collected(task.config.artifacts)
    clashes = overlapping(entries)
    base = trial_dir / ARTIFACTS_DIR
    base.mkdir(exist_ok=True)
    rows = [_skipped(e, entries[clashes[i]]) if i in clashes else _copy(sandbox, e, base, stage)
            for i, e in enumerate(entries)]
    (base / MANIFEST).write_text(json.dumps([r.model_dump(mode="json", exclude={"problem", "skipped"})
                                             | _ours(r) for r in rows], indent=2), encoding="utf-8")
    return rows


def _ours(row: ArtifactEntry) -> dict:
    """tbflow's own fields, written only when they say something (Harbor's readers ignore them)."""
    return {k: v for k, v in (("problem", row.problem), ("skipped", row.skipped)) if v}


def _skipped(entry: ArtifactSpec, earlier: ArtifactSpec) -> ArtifactEntry:
    return ArtifactEntry(source=entry.source, destination=str(host_relative(entry)), type="directory",
                         status="skipped", exclude=entry.exclude, problem=f"its place in artifacts/ overlaps "
                                                                          f"{earlier.source}'s, which was kept")


def _copy(sandbox: Sandbox, entry: ArtifactSpec, base: Path, stage: str) -> ArtifactEntry:
    rel = host_relative(entry)
    row = ArtifactEntry(source=entry.source, destination=str(rel), type="file", status="failed", exclude=entry.exclude)
    try:
        got = copy_out(sandbox.id, entry.source, base / rel, lambda member: excluded(member, entry.exclude),
                       MAX_ARTIFACT_BYTES, COPY_TIMEOUT_SEC, stage)
    except DownloadBoundExceeded as exc:  # the agent's doing: the artifact is not kept, never the trial's end
        row.problem = exc.message
        return row
    if not got.found:
        row.problem = "not found in the agent's container"
        return row
    row.type = "directory" if got.is_dir else "file"
    row.status = "empty" if got.empty else "ok"
    row.skipped = [escaped_name(n) for n in got.skipped[:100]]
    return row


def restore(sandbox: Sandbox, trial_dir: Path, rows: list[ArtifactEntry], stage: str) -> None:
    """Put the collected copies back at their sources in a fresh (verifier's) container. A
    directory artifact replaces what the image had there, as Harbor empties it first."""
    base = trial_dir / ARTIFACTS_DIR
    kept = [(base / r.destination, r.source) for r in rows if r.status in ("ok", "empty")
            and (base / r.destination).exists()]
    for host, source in kept:
        if host.is_dir():
            code, out = sandbox.run_tool(["/bin/rm", "-rf", "--", source], stage, timeout=60)
            if code != 0:
                raise TransferError(stage, f"{source} could not be emptied in the verifier's container: {out[-300:]}")
    if not kept:
        return
    with tempfile.TemporaryFile() as fh:
        pack_artifacts(kept, fh)
        fh.seek(0)
        sandbox.put(fh, "the artifacts", stage)
