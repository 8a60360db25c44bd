"""run-verifier: run the task's ``tests/test.sh`` and read a reward that can be trusted.

``/logs/verifier`` is emptied right before ``test.sh`` (an agent cannot pre-write a reward), the
tests are staged under tbflow's run dir and moved to ``/tests`` in the same exec, CRLF line ends
of scripts are normalised, and the reward files are snapshotted the moment ``test.sh`` exits: a
reward file that differs at download time was written by something else afterwards, and the
trial is invalid (verifier) rather than scored on it.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from .container_scripts import SNAPSHOT_DIR, TESTS_STAGING, VERIFIER_SID_FILE, VERIFIER_WRAPPER
from .records import VerifierOutcome
from .rewards import read_rewards
from .sandbox import Sandbox
from .task_model import Task

STAGE = "run-verifier"
REWARD_FILES = ("reward.txt", "reward.json")


def run_verifier(sandbox: Sandbox, task: Task, trial_dir: Path, timeout_sec: float) -> VerifierOutcome:
    sandbox.upload_dirs([(task.tests_dir, f"{TESTS_STAGING}/tests")], STAGE, normalise_crlf=True)
    workdir = task.config.environment.workdir or ""
    exec_id = sandbox.start_detached(VERIFIER_WRAPPER, [workdir], STAGE, user="root",
                                     env=task.config.verifier.env)
    result = sandbox.wait(exec_id, timeout_sec, STAGE,
                          on_deadline=lambda: sandbox.processes(STAGE, [VERIFIER_SID_FILE]))
    sandbox.download("/logs/verifier", trial_dir, STAGE)
    vdir = trial_dir / "verifier"
    vdir.mkdir(exist_ok=True)
    snap = vdir / Path(SNAPSHOT_DIR).name
    exit_code = _read_exit_code(snap)
    changed = [f for f in REWARD_FILES if _content(snap / f) != _content(vdir / f)]
    shutil.rmtree(snap, ignore_errors=True)
    base = dict(exit_code=exit_code, timeout_sec=timeout_sec, duration_sec=round(result.duration_sec, 3),
                stdout_log="verifier/test-stdout.txt")
    if result.timed_out:
        return VerifierOutcome(timed_out=True, problem=f"test.sh ran past the verifier timeout of {timeout_sec:g}s", **base)
    if changed:
        return VerifierOutcome(tampered=True, problem=f"{', '.join(changed)} changed after test.sh exited", **base)
    reading = read_rewards(vdir)
    return VerifierOutcome(reward=reading.reward, rewards=reading.rewards, problem=reading.problem, **base)


def _content(path: Path) -> bytes | None:
    return path.read_bytes() if path.is_file() else None


def _read_exit_code(snap: Path) -> int | None:
    try:
        return int((snap / "exit-code").read_text().strip())
    except (OSError, ValueError):
        return None
