"""run-verifier: run the task's ``tests/test.sh`` through tbflow's judge and read a reward that can be trusted.

The tests go into the read-only ``/tests`` volume from outside the container (``Sandbox.fill_tests``),
and the judge (judge/verify.c, started from the read-only tools volume, non-dumpable root) lists
what the verifier runs next to, repairs what test.sh needs, runs test.sh under the verifier
timeout with a static bash, and reports the reward files' bytes the moment test.sh exits, on a
channel no process in the container can open.

This module *collects*: every engine call (the judge's run, the container's state, the writable
layer before and after the verifier: ``runner_use``), each failure kept as evidence. The verdict
is ``verdict_table.decide``'s, one table; what it concludes becomes the outcome, the flags and the
evidence files here.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, Field

from tasks_lib.container.docker_client import DOCKER_ERRORS, get_client
from tasks_lib.container.judge.judge_exec import ToolRun
from tasks_lib.container.judge.judge_tools import test_bash
from tasks_lib.container.sandbox import Sandbox
from tasks_lib.errors import ContainerError, TransferError
from tasks_lib.container.container_outcomes import LogsOutcome, ProcessInfo
from tasks_lib.records.record_models import DEFAULT_MAX_LOG_BYTES, TrialFlag, VerifierOutcome, VerifierRunner
from tasks_lib.task.task_model import Task
from tasks_lib.trial.container_health import (MissingInterpreter, container_running, write_broke_evidence,
                                              writable_layer_bytes)
from tasks_lib.judge.judge_report import JudgeReport, parse_report
from tasks_lib.judge.rewards import RewardReading, read_reward_bytes
from tasks_lib.judge.runner_use import RunnerEvidence, runner_evidence, watch_runner, write_runner_evidence
from tasks_lib.trial.runner_plan import MOUNT
from tasks_lib.trial.runner_reading import runner_for_run, supplied_reading
from tasks_lib.judge.tampering import check_tampering
from tasks_lib.judge.verdict_table import JudgeRun, Verdict, VerifierEvidence, decide, runner_flags

STAGE = "run-verifier"
LOG_DIRS = ("agent", "verifier")
REWARD_CAP = 65536
#: the judge's own work around test.sh (listing, repairs, reading) on top of the verifier timeout
JUDGE_GRACE_SEC = 30.0
#: Docker's PATH for an image that sets none
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


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


def run_judge(sandbox: Sandbox, task: Task, timeout_sec: float, image_env: dict[str, str], workdir: str,
              runner: VerifierRunner) -> ToolRun:
    """The judge's ``verify``: test.sh verbatim, or (a ``tbflow`` runner) the supplied runner's command."""
    env = {**task.config.verifier.env, "HOME": image_env.get("HOME", "/root")}
    supplied = ["--", *runner.argv] if runner.source == "tbflow" else []
    if supplied:  # as uvx puts its environment's bin/ first: `python3` in a test is the runner's, as under test.sh
        env["PATH"] = f"{MOUNT}/bin:" + env.get("PATH", image_env.get("PATH", DEFAULT_PATH))
    return sandbox.judge(["verify", runner.cwd or workdir, str(int(timeout_sec * 1000)), test_bash(), *supplied], STAGE,
                         timeout_sec + JUDGE_GRACE_SEC, env=env)


def run_verifier(sandbox: Sandbox, task: Task, trial_dir: Path, timeout_sec: float,
                 max_log_bytes: int = DEFAULT_MAX_LOG_BYTES, runner: VerifierRunner | None = None) -> VerifierStageResult:
    """Collect (every engine call here, each failure kept as evidence), then ``decide``."""
    sandbox.fill_tests(task.tests_dir, STAGE)  # a read-only mount: outside the agent's reach
    inspect = sandbox.inspect(STAGE)  # one call: the image's environment and workdir, the layer's dirs
    config = inspect.get("Config") or {}
    workdir = task.config.environment.workdir or config.get("WorkingDir") or ""
    runner = runner_for_run(runner, workdir)
    # the supplied runner reads nothing the agent left: no evidence of its use to collect
    watch = (watch_runner(sandbox.id, inspect, task.tests_dir, task.config.verifier.env)
             if runner.source == "container" else None)
    image_env = dict(e.partition("=")[::2] for e in config.get("Env") or [])
    ev = VerifierEvidence(timeout_sec=timeout_sec, grace_sec=JUDGE_GRACE_SEC)
    flags: list[TrialFlag] = []
    logs = None
    try:
        run = run_judge(sandbox, task, timeout_sec, image_env, workdir, runner)
    except ContainerError as exc:
        ev.start_error, ev.engine_answers = exc.message, _engine_answers()
        ev.container_running = ev.engine_answers and container_running(sandbox.id)
        run = None
    if run is not None:
        ev.run = JudgeRun(complete=run.complete, exit_code=run.exit_code, timed_out=run.timed_out,
                          overflow=run.overflow, duration_sec=round(run.duration_sec, 3), problem=run.channel.problem)
        missing = run.channel.first("norunner")
        if missing is not None:  # a read-only mount of tbflow's: gone is the host's failure, not the agent's
            raise ContainerError(STAGE, f"tbflow's supplied runner is missing: {missing.decode(errors='replace')}")
        ev.report = parse_report(run.channel)
        ev.reading = _reading(ev.report) if watch is not None else supplied_reading(ev.report, runner)
        if not run.complete:
            ev.container_running = container_running(sandbox.id)
        logs, downloaded = _download(sandbox, trial_dir, max_log_bytes, flags)
        flags += check_tampering(ev.report, trial_dir, verifier_downloaded=downloaded, complete=run.complete)
    ev.runner = (runner_evidence(watch, ev.report.agent_write_bytes, ev.report.marked_ns, ev.report.counted_ns)
                 if watch is not None else RunnerEvidence(source="tbflow"))
    if any(d.full for d in ev.report.disks) and ev.runner.written_bytes is None:
        ev.runner.written_bytes = writable_layer_bytes(sandbox.id)
    (trial_dir / "verifier").mkdir(exist_ok=True)
    return _result(decide(ev), ev, trial_dir, flags, logs, runner)


def _result(v: Verdict, ev: VerifierEvidence, trial_dir: Path, flags: list[TrialFlag],
            logs: LogsOutcome | None, runner: VerifierRunner) -> VerifierStageResult:
    """The verdict as the trial's outcome and flags (or the environment's error, raised)."""
    if v.environment is not None:
        raise (MissingInterpreter if v.missing_interpreter else ContainerError)(STAGE, v.environment)
    flags += _runner_flags(ev.runner, trial_dir)
    r = ev.report
    if r.ran_next_to:
        shown = "; ".join(p.command[:120] for p in r.ran_next_to[:5])
        flags.append(TrialFlag(kind="agent-processes", message=f"{len(r.ran_next_to)} process(es) the agent left "
                               f"ran next to test.sh: {shown}"))
    broke = None
    if v.broke is not None:
        broke = TrialFlag(kind="broke-container", message=v.broke, evidence=write_broke_evidence(v.row, ev, trial_dir))
    outcome = VerifierOutcome(
        exit_code=r.exit_code, timeout_sec=ev.timeout_sec, duration_sec=ev.run.duration_sec if ev.run else 0.0,
        stdout_log="verifier/test-stdout.txt" if ev.run else None, tampered=any(f.kind == "tampering" for f in flags),
        timed_out=v.timed_out, problem=v.problem,
        reward=ev.reading.reward if v.row == "scored" else None,
        rewards=ev.reading.rewards if v.row == "scored" else {}, runner=runner)
    return VerifierStageResult(outcome=outcome, ran_next_to=r.ran_next_to if r.started else None,
                               flags=flags, broke=broke, logs=logs)


def _runner_flags(runner: RunnerEvidence, trial_dir: Path) -> list[TrialFlag]:
    evidence = write_runner_evidence(runner, trial_dir)
    return [TrialFlag(kind=kind, message=message, evidence=evidence)  # type: ignore[arg-type]
            for kind, message in runner_flags(runner)]


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
