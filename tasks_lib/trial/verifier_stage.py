"""run-verifier: run the task's ``tests/test.sh`` and read a reward that can be trusted.

``/logs/verifier`` is emptied right before ``test.sh`` (an agent cannot pre-write a reward), the
tests reach ``/tests`` in the same exec (as the exec's own arguments when small, see
``inline_files``; else uploaded to a staging dir and moved), CRLF line ends of scripts are
normalised, and the reward files are snapshotted the moment ``test.sh`` exits: a reward file that
differs at download time was written by something else afterwards, and the trial is invalid
(verifier) rather than scored on it.

The wrapper also lists the processes running when it starts — what the verifier runs next to —
so a trial whose agent finished by itself needs no separate process-listing exec. At the end one
download of ``/logs`` brings the verifier's output and the agent's logs together (each archive
call costs ~80 ms on Docker 20.10); ``collect_agent_logs`` is the fallback when this stage never
got that far.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from pydantic import BaseModel

from tasks_lib.container.container_scripts import (PROCESS_TOOL, SNAPSHOT_DIR, TESTS_STAGING, VERIFIER_SID_FILE,
                                VERIFIER_WRAPPER)
from tasks_lib.errors import TransferError
from tasks_lib.container.inline_files import inline_tree
from tasks_lib.job.records import ProcessInfo, VerifierOutcome
from tasks_lib.trial.rewards import read_rewards
from tasks_lib.container.sandbox import Sandbox, parse_process_lines
from tasks_lib.job.task_model import Task

STAGE = "run-verifier"
REWARD_FILES = ("reward.txt", "reward.json")
LOG_DIRS = ("agent", "verifier")


class VerifierStageResult(BaseModel):
    outcome: VerifierOutcome
    #: processes running when the wrapper started, before test.sh; None if it never listed them
    ran_next_to: list[ProcessInfo] | None = None


def run_verifier(sandbox: Sandbox, task: Task, trial_dir: Path, timeout_sec: float) -> VerifierStageResult:
    inline = inline_tree(task.tests_dir, normalise_crlf=True)
    if inline is None:
        sandbox.upload_dirs([(task.tests_dir, f"{TESTS_STAGING}/tests")], STAGE, normalise_crlf=True)
    workdir = task.config.environment.workdir or ""
    args = [workdir, PROCESS_TOOL, "staged"] if inline is None else [workdir, PROCESS_TOOL, "inline", *inline]
    exec_id = sandbox.start_detached(VERIFIER_WRAPPER, args, STAGE, user="root", env=task.config.verifier.env)
    result = sandbox.wait(exec_id, timeout_sec, STAGE,
                          on_deadline=lambda: sandbox.processes(STAGE, [VERIFIER_SID_FILE]))
    sandbox.download("/logs", trial_dir, STAGE, keep=LOG_DIRS)
    vdir = trial_dir / "verifier"
    vdir.mkdir(exist_ok=True)
    snap = vdir / Path(SNAPSHOT_DIR).name
    exit_code = _read_exit_code(snap)
    changed = [f for f in REWARD_FILES if _content(snap / f) != _content(vdir / f)]
    listing = _content(snap / "ran-next-to")
    ran_next_to = parse_process_lines(listing.decode("utf-8", "replace"))[1] if listing is not None else None
    shutil.rmtree(snap, ignore_errors=True)
    base = dict(exit_code=exit_code, timeout_sec=timeout_sec, duration_sec=round(result.duration_sec, 3),
                stdout_log="verifier/test-stdout.txt")
    if result.timed_out:
        outcome = VerifierOutcome(timed_out=True, problem=f"test.sh ran past the verifier timeout of {timeout_sec:g}s", **base)
    elif changed:
        outcome = VerifierOutcome(tampered=True, problem=f"{', '.join(changed)} changed after test.sh exited", **base)
    else:
        reading = read_rewards(vdir)
        outcome = VerifierOutcome(reward=reading.reward, rewards=reading.rewards, problem=reading.problem, **base)
    return VerifierStageResult(outcome=outcome, ran_next_to=ran_next_to)


def collect_agent_logs(sandbox: Sandbox, trial_dir: Path) -> None:
    """Best effort: keep the agent's logs when the trial failed before the verifier downloaded
    them (the failure itself is what gets recorded)."""
    try:
        sandbox.download("/logs", trial_dir, STAGE, keep=("agent",))
    except TransferError:
        pass


def _content(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _read_exit_code(snap: Path) -> int | None:
    try:
        return int((snap / "exit-code").read_text().strip())
    except (OSError, ValueError):
        return None
