"""The supplied runner at verify time (pure): whether it runs here, and the reward its exit gives.

test.sh's last block writes ``on_pass`` when its test command exits 0 and ``on_fail`` otherwise
(``read_runner_pins``); with tbflow's runner the judge reports that command's exit status on its
channel, so the reward is computed here from the status instead of read from a file a leftover
process of the agent could also write.
"""

from __future__ import annotations

from tasks_lib.records.record_models import VerifierRunner
from tasks_lib.judge.judge_report import JudgeReport
from tasks_lib.judge.rewards import RewardReading, read_reward_bytes

NOT_CHOSEN = VerifierRunner(source="container", why="no runner was chosen for this trial")


def runner_for_run(runner: VerifierRunner | None, workdir: str) -> VerifierRunner:
    """The runner the judge starts: test.sh verbatim where the supplied one would not behave as
    test.sh does (its working-directory check refuses ``/``, writing no reward)."""
    if runner is None:
        return NOT_CHOSEN
    if runner.source == "tbflow" and runner.checks_workdir and (runner.cwd or workdir) in ("", "/"):
        return VerifierRunner(source="container", why="the working directory is /, where test.sh refuses to run")
    return runner


def supplied_reading(report: JudgeReport, runner: VerifierRunner) -> RewardReading:
    """What test.sh's reward block would have written for the runner's exit (a signal is non-zero
    for bash too); no reading when the runner did not end (a timeout is the verdict table's)."""
    if report.exit_code is None and report.signal is None:
        return RewardReading()
    value = (runner.on_pass if report.exit_code == 0 else runner.on_fail).encode()
    if runner.reward_path.endswith(".json"):
        return read_reward_bytes(None, value)
    return read_reward_bytes(value, None)
