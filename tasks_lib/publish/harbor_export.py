"""Write a Harbor job directory from a tbflow job directory (the I/O around ``harbor_map``).

Layout (what Harbor's viewer and the leaderboard read)::

    DIR/metadata.yaml                      the submission's metadata (a template; kept if present)
    DIR/<job_name>/config.json             run conditions
    DIR/<job_name>/result.json             counts and per-agent stats
    DIR/<job_name>/<trial>/result.json     one per recorded trial (and its config.json)
    DIR/<job_name>/<trial>/agent/          the harness's logs (a host-side agent's in agent/host-agent/),
                                           and trajectory.json when recorded
    DIR/<job_name>/<trial>/verifier/       test output, reward files, ctrf.json
    DIR/<job_name>/<trial>/artifacts/      what was collected after the agent phase, manifest.json

``DIR`` is then both a leaderboard submission folder and a jobs dir for ``harbor view DIR``.
The job dir is built beside its final place and renamed into it, so a reader never sees half an
export; an earlier export of the same job is replaced, anything else in the way is refused.
Only regular files are copied (a symlink an agent left among its logs is not followed).
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from pydantic import BaseModel, Field

from tasks_lib.errors import InputError
from tasks_lib.publish.harbor_map import job_config, job_result, trial_result
from tasks_lib.publish.leaderboard_rules import RuleBreak, rule_breaks
from tasks_lib.publish.metadata_template import metadata_yaml
from tasks_lib.report.report_inputs import load_job
from tasks_lib.store.job_store import write_atomic

TRAJECTORY = "trajectory.json"
AGENT_WRITTEN_TRAJECTORY = "trajectory.agent-written.json"
#: trial-dir folder -> where Harbor keeps it (a host-side agent's own logs are agent logs too)
_COPIED = {"agent": "agent", "host-agent": "agent/host-agent", "verifier": "verifier", "artifacts": "artifacts"}


class ExportSummary(BaseModel):
    """What ``tbflow export`` wrote and what the leaderboard would refuse."""

    job_dir: str = Field(description="The exported Harbor job directory.")
    trials: int
    exceptions: int = Field(description="Trials exported as exceptions (invalid or a tbflow error).")
    trajectories: int
    rule_breaks: list[RuleBreak]


def _copy_regular_files(src: Path, dst: Path) -> None:
    """Copy ``src``'s regular files into ``dst`` (tree kept); symlinks and specials are skipped,
    and ``os.walk`` does not descend into a symlinked directory. A ``trajectory.json`` at the top
    of the agent's own logs is the agent's writing, not tbflow's record: it is kept under
    ``AGENT_WRITTEN_TRAJECTORY``, so Harbor (and the leaderboard's judge) never takes it for one."""
    if not src.is_dir() or src.is_symlink():
        return
    for root, dirs, files in os.walk(src, followlinks=False):
        dirs.sort()
        for name in sorted(files):
            path = Path(root) / name
            if stat.S_ISREG(path.lstat().st_mode):
                rel = path.relative_to(src).as_posix()
                out = dst / (AGENT_WRITTEN_TRAJECTORY if rel == TRAJECTORY else rel)
                out.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(path, out)


def _is_earlier_export(path: Path) -> bool:
    return (path / "config.json").is_file() and (path / "result.json").is_file() and not (path / "job.json").exists()


def _json(model: BaseModel) -> str:
    return model.model_dump_json(indent=4) + "\n"


def export_harbor(job_dir: Path, to: Path) -> ExportSummary:
    """Export the job at ``job_dir`` into ``to`` (see the module docstring)."""
    loaded = load_job(Path(job_dir))
    job, records = loaded.job, sorted(loaded.trials, key=lambda r: r.trial_id)
    target = Path(to) / job.job_name
    if target.exists() and not _is_earlier_export(target):
        raise InputError("--to", f"{target} exists and is not an earlier Harbor export; choose another --to")
    staging = Path(to) / f".{job.job_name}.export-tmp"
    shutil.rmtree(staging, ignore_errors=True)
    staging.mkdir(parents=True)
    results, with_trajectory = [], set()
    for record in records:
        src, dst = loaded.job_dir / "trials" / record.trial_id, staging / record.trial_id
        for sub, there in _COPIED.items():
            _copy_regular_files(src / sub, dst / there)
        trajectory = src / TRAJECTORY
        if trajectory.is_file() and not trajectory.is_symlink():
            (dst / "agent").mkdir(parents=True, exist_ok=True)
            shutil.copyfile(trajectory, dst / "agent" / TRAJECTORY)
            with_trajectory.add(record.trial_id)
        result = trial_result(job, record, trials_dir=job.job_name)
        write_atomic(dst / "config.json", _json(result.config))
        write_atomic(dst / "result.json", _json(result))
        results.append(result)
    write_atomic(staging / "config.json", _json(job_config(job, records, jobs_dir=".")))
    write_atomic(staging / "result.json", _json(job_result(job, results)))
    if target.exists():
        shutil.rmtree(target)
    staging.rename(target)
    meta = Path(to) / "metadata.yaml"
    if not meta.exists():
        config = job.config or {}
        write_atomic(meta, metadata_yaml([h for h in config.get("harnesses") or [] if isinstance(h, str)],
                                         config.get("model")))
    return ExportSummary(job_dir=str(target), trials=len(results),
                         exceptions=sum(r.exception_info is not None for r in results),
                         trajectories=len(with_trajectory),
                         rule_breaks=rule_breaks(job, records, with_trajectory))
