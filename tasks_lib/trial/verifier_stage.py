"""run-verifier: run the task's ``tests/test.sh`` and read a reward that can be trusted.

``/logs/verifier`` is emptied (and recreated as root when the agent removed it) right before
``test.sh``, the tests reach ``/tests`` in the same exec (as the exec's own arguments when small,
see ``inline_files``; else uploaded to a staging dir and moved), and CRLF line ends of scripts are
normalised.

The reward is the one ``test.sh`` wrote: the wrapper reports the reward files' bytes the moment
``test.sh`` exits on the exec's own stdout, which tbflow reads on the host (``verifier_witness``).
Nothing left running in the container can change that report afterwards; what it changes in the
files is flagged as tampering with evidence (``tampering``), and the trial stays scored. An agent
that broke what ``test.sh`` needs gets its own result (``container_health``).

The wrapper also lists the processes running when it starts — what the verifier runs next to —
so a trial whose agent finished by itself needs no separate process-listing exec. At the end one
download of ``/logs`` brings the verifier's output and the agent's logs together (each archive
call costs ~80 ms on Docker 20.10); ``collect_agent_logs`` is the fallback when this stage never
got that far.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tasks_lib.trial.container_health import container_running, verifier_breakage
from tasks_lib.container.container_scripts import (PROCESS_TOOL, REWARD_REPORT_CAP, TESTS_STAGING, VERIFIER_SID_FILE,
                                                   VERIFIER_WRAPPER)
from tasks_lib.errors import ContainerError, TransferError
from tasks_lib.container.exec_capture import MAX_BYTES
from tasks_lib.container.inline_files import inline_tree
from tasks_lib.job.records import DEFAULT_MAX_LOG_BYTES, LogsOutcome, ProcessInfo, TrialFlag, VerifierOutcome
from tasks_lib.trial.rewards import RewardReading, read_reward_bytes
from tasks_lib.container.sandbox import Sandbox, parse_process_lines
from tasks_lib.trial.tampering import check_tampering
from tasks_lib.job.task_model import Task
from tasks_lib.trial.verifier_witness import Witness, parse_witness

STAGE = "run-verifier"
LOG_DIRS = ("agent", "verifier")


class VerifierStageResult(BaseModel):
    outcome: VerifierOutcome
    #: processes running when the wrapper started, before test.sh; None if it never listed them
    ran_next_to: list[ProcessInfo] | None = None
    #: tampering seen around the verifier; the reward is test.sh's own regardless
    flags: list[TrialFlag] = Field(default_factory=list)
    #: set when the agent broke what test.sh needs: the trial is scored 0
    broke: TrialFlag | None = None
    #: what was skipped or cut when /logs came out
    logs: LogsOutcome | None = None


def run_verifier(sandbox: Sandbox, task: Task, trial_dir: Path, timeout_sec: float,
                 max_log_bytes: int = DEFAULT_MAX_LOG_BYTES) -> VerifierStageResult:
    inline = inline_tree(task.tests_dir, normalise_crlf=True)
    if inline is None:
        sandbox.upload_dirs([(task.tests_dir, f"{TESTS_STAGING}/tests")], STAGE, normalise_crlf=True)
    workdir = task.config.environment.workdir or sandbox.working_dir(STAGE)
    args = [workdir, PROCESS_TOOL, "staged"] if inline is None else [workdir, PROCESS_TOOL, "inline", *inline]
    capture = sandbox.start_captured(VERIFIER_WRAPPER, args, STAGE, user="root", env=task.config.verifier.env)
    try:
        result = sandbox.wait(capture.exec_id, timeout_sec, STAGE,
                              on_deadline=lambda: sandbox.processes(STAGE, [VERIFIER_SID_FILE]))
    finally:
        witness = parse_witness(capture.finish())
    if capture.overflow:
        witness.stray.append(f"(the channel carried more than {MAX_BYTES} bytes)")
    logs = sandbox.download_logs("/logs", trial_dir, STAGE, LOG_DIRS, max_log_bytes)
    # the download creates verifier/ only when the archive held it (the agent may have removed it)
    flags = check_tampering(witness, trial_dir, verifier_downloaded=(trial_dir / "verifier").is_dir())
    vdir = trial_dir / "verifier"
    vdir.mkdir(exist_ok=True)
    ran_next_to = parse_process_lines("\n".join(witness.ran_next_to))[1] if witness.started else None
    base: dict[str, Any] = dict(exit_code=witness.exit_code, timeout_sec=timeout_sec,
                                duration_sec=round(result.duration_sec, 3), stdout_log="verifier/test-stdout.txt",
                                tampered=bool(flags))
    broke = None
    if result.timed_out:
        outcome = VerifierOutcome(timed_out=True, **base,
                                  problem=f"test.sh ran past the verifier timeout of {timeout_sec:g}s")
    elif witness.conflicts or (witness.stray and not witness.done):
        outcome = VerifierOutcome(problem="the verifier's report was forged inside the container", **base)
        broke = TrialFlag(kind="broke-container", evidence=flags[-1].evidence if flags else None,
                          message="a process in the container wrote into tbflow's verifier channel, so the reward "
                                  "test.sh wrote cannot be told apart")
    elif not witness.done and witness.failure is None:
        if not container_running(sandbox.id):  # trial_flow asks Docker whose doing that was
            raise ContainerError(STAGE, f"the container stopped while the verifier ran (exit {result.exit_code})")
        outcome = VerifierOutcome(problem=f"tbflow's verifier wrapper ended (exit {result.exit_code}) before it "
                                          "reported test.sh's result", **base)
        broke = TrialFlag(kind="broke-container", evidence=None,
                          message=f"tbflow's verifier wrapper was killed (exit {result.exit_code}) before it reported "
                                  "test.sh's result; only a process in the container can do that")
    else:
        reading = _reading(witness)
        outcome = VerifierOutcome(reward=reading.reward, rewards=reading.rewards,
                                  problem=witness.failure or reading.problem, **base)
        if outcome.reward is None:
            broke = verifier_breakage(sandbox.id, witness, trial_dir)
    return VerifierStageResult(outcome=outcome, ran_next_to=ran_next_to, flags=flags, broke=broke, logs=logs)


def _reading(w: Witness) -> RewardReading:
    too_big = [n for n, f in w.files.items() if not f.complete]
    if too_big:
        return RewardReading(problem=f"{too_big[0]} is larger than {REWARD_REPORT_CAP} bytes")
    return read_reward_bytes(w.files["reward.txt"].data if "reward.txt" in w.files else None,
                             w.files["reward.json"].data if "reward.json" in w.files else None)


def collect_agent_logs(sandbox: Sandbox, trial_dir: Path, max_log_bytes: int = DEFAULT_MAX_LOG_BYTES) -> LogsOutcome | None:
    """Best effort: keep the agent's logs when the trial failed before the verifier downloaded
    them (the failure itself is what gets recorded)."""
    try:
        return sandbox.download_logs("/logs", trial_dir, STAGE, ("agent",), max_log_bytes)
    except TransferError:
        return None

