"""run-verifier: run the task's ``tests/test.sh`` through tbflow's judge and read a reward that can be trusted.

The tests go into the read-only ``/tests`` volume from outside the container (``Sandbox.fill_tests``),
and the judge (judge/verify.c, started from the read-only tools volume, non-dumpable root) lists
what the verifier runs next to, repairs what test.sh needs, runs test.sh under the verifier
timeout with a static bash, and reports the reward files' bytes the moment test.sh exits, on a
channel no process in the container can open. What the agent changed around it is flagged
(``tampering``, ``toolchain_diff``); what it broke is its own result (``container_health``).

One rule once the agent has started (README "The judge"): a failure inside the container — the
judge killed, stopped or unable to start, a missing, odd or unreadable reward while agent
processes ran, a replaced verifier dir — is the agent's result, scored 0 with a flag. Only
evidence from outside (the engine not answering, the container stopped from outside, the host's
disk) makes the trial an environment failure.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.container.judge_exec import ToolRun
from tasks_lib.container.judge_tools import test_bash
from tasks_lib.container.sandbox import Sandbox
from tasks_lib.errors import ContainerError, TransferError
from tasks_lib.container.container_outcomes import LogsOutcome, ProcessInfo
from tasks_lib.records.record_models import DEFAULT_MAX_LOG_BYTES, TrialFlag, VerifierOutcome
from tasks_lib.task.task_model import Task
from tasks_lib.trial.container_health import container_running, verifier_breakage
from tasks_lib.trial.judge_report import JudgeReport, parse_report
from tasks_lib.trial.rewards import RewardReading, read_reward_bytes
from tasks_lib.trial.tampering import check_tampering
from tasks_lib.trial.toolchain_diff import ContainerDiff, toolchain_flag

STAGE = "run-verifier"
LOG_DIRS = ("agent", "verifier")
REWARD_CAP = 65536
#: the judge's own work around test.sh (listing, repairs, reading) on top of the verifier timeout
JUDGE_GRACE_SEC = 30.0


class VerifierStageResult(BaseModel):
    outcome: VerifierOutcome
    #: processes running when the judge started, before test.sh; None if it never listed them
    ran_next_to: list[ProcessInfo] | None = None
    #: what the agent did around the verifier; the reward is test.sh's own regardless
    flags: list[TrialFlag] = Field(default_factory=list)
    #: set when the agent broke what test.sh needs: the trial is scored 0
    broke: TrialFlag | None = None
    #: what was skipped or cut when /logs came out
    logs: LogsOutcome | None = None


def _broke(message: str, evidence: str | None = None) -> TrialFlag:
    return TrialFlag(kind="broke-container", message=message, evidence=evidence)


def _engine_answers() -> bool:
    try:
        return bool(get_client().ping())
    except DOCKER_ERRORS:
        return False


def agents_doing(sandbox: Sandbox) -> bool:
    """Whether a failure of tbflow's own tools is the agent's doing: the engine answers and the
    container still runs, so nothing outside the container explains it (the tools come from a
    read-only volume; the agent is root in there)."""
    return _engine_answers() and container_running(sandbox.id)


def inside_failure(sandbox: Sandbox, exc: ContainerError) -> TrialFlag:
    """A tool of tbflow's that failed where only the agent can explain it is scored 0; else the error stands."""
    if not agents_doing(sandbox):
        raise exc
    return _broke(f"tbflow's judge could not run in the container ({exc.message}); only the agent's processes "
                  "(e.g. the container's pids limit reached) can cause that")


def run_judge(sandbox: Sandbox, task: Task, timeout_sec: float, image_env: dict[str, str], workdir: str) -> ToolRun:
    env = {**task.config.verifier.env, "HOME": image_env.get("HOME", "/root")}
    return sandbox.judge(["verify", workdir, str(int(timeout_sec * 1000)), test_bash()], STAGE,
                         timeout_sec + JUDGE_GRACE_SEC, env=env)


def run_verifier(sandbox: Sandbox, task: Task, trial_dir: Path, timeout_sec: float,
                 max_log_bytes: int = DEFAULT_MAX_LOG_BYTES) -> VerifierStageResult:
    sandbox.fill_tests(task.tests_dir, STAGE)  # through the filler: outside the agent's reach
    diff = ContainerDiff.take(sandbox.id)
    config = sandbox.config(STAGE)  # one inspect: the image's environment and working dir
    image_env = dict(e.partition("=")[::2] for e in config.get("Env") or [])
    changed = toolchain_flag(diff, image_env.get("PATH", ""), trial_dir)
    flags = [changed] if changed else []
    try:
        run = run_judge(sandbox, task, timeout_sec, image_env,
                        task.config.environment.workdir or config.get("WorkingDir") or "")
    except ContainerError as exc:
        failed = inside_failure(sandbox, exc)
        return VerifierStageResult(outcome=VerifierOutcome(timeout_sec=timeout_sec, duration_sec=0.0,
                                                           problem=failed.message), flags=flags, broke=failed)
    report = parse_report(run.channel)
    logs, downloaded = _download(sandbox, trial_dir, max_log_bytes, flags)
    flags += check_tampering(report, trial_dir, verifier_downloaded=downloaded, complete=run.complete)
    (trial_dir / "verifier").mkdir(exist_ok=True)
    if report.ran_next_to:
        shown = "; ".join(p.command[:120] for p in report.ran_next_to[:5])
        flags.append(TrialFlag(kind="agent-processes", message=f"{len(report.ran_next_to)} process(es) the agent left "
                               f"ran next to test.sh: {shown}"))
    base: dict[str, Any] = dict(exit_code=report.exit_code, timeout_sec=timeout_sec,
                                duration_sec=round(run.duration_sec, 3), stdout_log="verifier/test-stdout.txt",
                                tampered=any(f.kind == "tampering" for f in flags))
    outcome, broke = _verdict(sandbox, run, report, diff, trial_dir, base)
    return VerifierStageResult(outcome=outcome, ran_next_to=report.ran_next_to if report.started else None,
                               flags=flags, broke=broke, logs=logs)


def _verdict(sandbox: Sandbox, run: ToolRun, report: JudgeReport, diff: ContainerDiff, trial_dir: Path,
             base: dict[str, Any]) -> tuple[VerifierOutcome, TrialFlag | None]:
    """The outcome and, when the agent broke its verification, the flag that scores it 0."""
    timeout = base["timeout_sec"]
    if not run.complete:
        if not container_running(sandbox.id):  # trial_flow asks Docker whose doing that was
            raise ContainerError(STAGE, f"the container stopped while the verifier ran (exit {run.exit_code})")
        if run.exit_code == 0 and not run.timed_out and not run.overflow:
            # it ended by itself (a killed judge exits 128+n; Docker reports that, not the agent), so
            # the report was lost between the exec and us (judge/judge.h): the environment's failure
            raise ContainerError(STAGE, "tbflow's judge ended normally but its report did not arrive whole "
                                        f"({run.channel.problem or 'no end record'})")
        how = (f"did not finish within {timeout + JUDGE_GRACE_SEC:g} s (stopped from inside)" if run.timed_out
               else f"was killed (exit {run.exit_code})")
        return (VerifierOutcome(problem=f"tbflow's judge {how} before it reported test.sh's result", **base),
                _broke(f"tbflow's judge {how} before it reported test.sh's result; only a process in the "
                       "container can do that"))
    agent_ran = bool(report.ran_next_to)
    if report.timed_out:
        outcome = VerifierOutcome(timed_out=True, problem=f"test.sh ran past the verifier timeout of {timeout:g}s", **base)
        if agent_ran:
            return outcome, _broke(f"test.sh ran past the verifier timeout of {timeout:g}s while "
                                   f"{len(report.ran_next_to)} process(es) the agent left ran next to it")
        return outcome, None
    odd = {n: t for n, t in report.file_types.items() if n in ("reward.txt", "reward.json")}
    if odd:
        name, kind = next(iter(odd.items()))
        return (VerifierOutcome(problem=f"{name} was a {kind} when test.sh exited", **base),
                _broke(f"{name} was a {kind}, not a file, when test.sh exited"))
    if agent_ran and report.reward_rewrites:
        return (VerifierOutcome(problem=f"the reward files changed while test.sh ran: {report.reward_rewrites}", **base),
                _broke(f"while test.sh ran next to processes the agent left, {report.reward_rewrites}; the reward "
                       "test.sh wrote cannot be told apart"))
    reading = _reading(report)
    outcome = VerifierOutcome(reward=reading.reward, rewards=reading.rewards,
                              problem=report.failure or reading.problem, **base)
    if outcome.reward is not None:
        return outcome, None
    broke = verifier_breakage(sandbox.id, report, diff, trial_dir)
    if broke is None and (agent_ran or report.failure):
        why = report.failure or outcome.problem or "no reward"
        broke = _broke(f"test.sh gave no reward ({why}) while {len(report.ran_next_to)} process(es) the agent left "
                       "ran next to it" if agent_ran else f"tbflow's judge could not prepare test.sh: {why}")
    return outcome, broke


def _download(sandbox: Sandbox, trial_dir: Path, max_log_bytes: int,
              flags: list[TrialFlag]) -> tuple[LogsOutcome | None, bool]:
    """/logs comes out as evidence only (the reward came on the judge's channel), so a download
    the agent made fail is flagged, never an environment failure."""
    try:
        logs = sandbox.download_logs("/logs", trial_dir, STAGE, LOG_DIRS, max_log_bytes)
    except TransferError as exc:
        if not agents_doing(sandbox):
            raise
        flags.append(TrialFlag(kind="tampering", message=f"/logs could not be downloaded after test.sh: {exc.message}"))
        return None, False
    # the download creates verifier/ only when the archive held it (the agent may have removed it)
    return logs, (trial_dir / "verifier").is_dir()


def _reading(r: JudgeReport) -> RewardReading:
    too_big = [n for n, f in r.files.items() if n in ("reward.txt", "reward.json") and not f.complete]
    if too_big:
        return RewardReading(problem=f"{too_big[0]} is larger than {REWARD_CAP} bytes")
    return read_reward_bytes(r.files["reward.txt"].data if "reward.txt" in r.files else None,
                             r.files["reward.json"].data if "reward.json" in r.files else None)


def collect_agent_logs(sandbox: Sandbox, trial_dir: Path, max_log_bytes: int = DEFAULT_MAX_LOG_BYTES) -> LogsOutcome | None:
    """Best effort: keep the agent's logs when the trial failed before the verifier downloaded
    them (the failure itself is what gets recorded)."""
    try:
        return sandbox.download_logs("/logs", trial_dir, STAGE, ("agent",), max_log_bytes)
    except TransferError:
        return None
