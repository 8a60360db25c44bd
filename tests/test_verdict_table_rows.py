"""Each row of the run-verifier verdict table (tasks_lib/judge/verdict_table.py), without Docker,
and the case table of docs/judge.md checked against it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tasks_lib.container.container_outcomes import ProcessInfo
from tasks_lib.judge.judge_report import Disk, JudgeReport, StuckProcess
from tasks_lib.judge.rewards import RewardReading
from tasks_lib.judge.runner_use import RunnerEvidence, RunnerFile
from tasks_lib.judge.verdict_table import ROWS, JudgeRun, VerifierEvidence, decide, runner_flags

DONE = JudgeRun(complete=True, exit_code=0, duration_sec=10.0)
SERVICE = [ProcessInfo(pid=7, sid=7, command="python3 -m http.server")]
PLANTED = RunnerEvidence(source="upperdir", files=[RunnerFile(path="/usr/local/bin/pytest", change="added",
                                                              role="runner-command", used=True)])


def ev(**kw) -> VerifierEvidence:
    return VerifierEvidence(timeout_sec=60, grace_sec=30, **{"run": DONE, **kw})


def report(**kw) -> JudgeReport:
    return JudgeReport(started=True, **kw)


ONE = RewardReading(reward=1.0)
FULL_OVERLAY = [Disk(path="/", fstype="overlay", total_kb=1000, avail_kb=0)]
CASES = {
    "judge-not-started": ev(run=None, start_error="engine gone", engine_answers=False),
    "judge-not-started-inside": ev(run=None, start_error="pids limit", engine_answers=True, container_running=True),
    "container-stopped": ev(run=JudgeRun(complete=False, exit_code=137), container_running=False),
    "report-lost": ev(run=JudgeRun(complete=False, exit_code=0), container_running=True),
    "judge-stopped": ev(run=JudgeRun(complete=False, exit_code=137), container_running=True),
    "planted-runner-no-reward": ev(report=report(timed_out=True), runner=PLANTED),
    "verifier-blocked": ev(report=report(timed_out=True, ran_next_to=SERVICE,
                                         stuck=[StuckProcess(pid=9, state="T", wchan="do_signal_stop", exe="/bin/sh")])),
    "verifier-timeout": ev(report=report(timed_out=True, ran_next_to=SERVICE, agent_cpu_sec=0.2)),
    "reward-after-test-sh-was-killed": ev(report=report(ran_next_to=SERVICE, signal=9, oom_kills=0), reading=ONE),
    "test-sh-killed-no-reward": ev(report=report(signal=9, oom_kills=0)),
    "reward-not-a-file": ev(report=report(file_types={"reward.txt": "fifo"})),
    "reward-rewritten": ev(report=report(ran_next_to=SERVICE, watch={"deleted": 1}), reading=ONE),
    "scored": ev(report=report(ran_next_to=SERVICE), reading=ONE, runner=PLANTED),
    "no-bash": ev(report=report(no_bash="/usr/bin/bash")),
    "system-files-deleted": ev(report=report(), runner=RunnerEvidence(source="upperdir",
                                                                      deleted_system=["/usr/bin/python3.11"])),
    "disk-full-private": ev(report=report(disks=[Disk(path="/tmp", fstype="tmpfs", total_kb=1024, avail_kb=0)])),
    "disk-full-own": ev(report=report(disks=FULL_OVERLAY), runner=RunnerEvidence(source="upperdir", written_bytes=900_000)),
    "disk-full-host": ev(report=report(disks=FULL_OVERLAY), runner=RunnerEvidence(source="upperdir", written_bytes=10)),
    "no-reward-next-to-agent": ev(report=report(ran_next_to=SERVICE)),
    "no-reward": ev(report=report(exit_code=1)),
}


@pytest.mark.parametrize("row", list(CASES))
def test_each_row_holds_for_its_case(row):
    v = decide(CASES[row])
    assert v.row == row, v


def test_every_row_of_the_table_has_a_case():
    assert [name for name, _, _ in ROWS] == list(CASES)


def test_scored_row_keeps_the_reward_and_the_gate_flag_names_the_planted_file():
    e = CASES["scored"]
    assert decide(e).broke is None and decide(e).environment is None
    (kind, message), = runner_flags(e.runner)
    assert kind == "toolchain-changed" and "added /usr/local/bin/pytest" in message


def test_timeout_next_to_an_idle_service_is_not_the_agents():
    v = decide(CASES["verifier-timeout"])
    assert (v.broke, v.environment, v.timed_out) == (None, None, True)


def test_timeout_next_to_a_process_burning_the_cpu_is_the_agents():
    v = decide(ev(report=report(timed_out=True, ran_next_to=SERVICE, agent_cpu_sec=9.0)))
    assert v.row == "verifier-blocked" and "CPU" in (v.broke or "")


def test_timeout_blocked_on_a_fifo_the_agent_made_is_the_agents():
    fifo = RunnerEvidence(source="upperdir", files=[RunnerFile(path="/app/in", change="added", role="fifo", used=False)])
    v = decide(ev(report=report(timed_out=True, stuck=[StuckProcess(pid=3, state="S", wchan="fifo_open", exe="/bin/cat",
                                                                    fifo_paths=["/app/in"])]), runner=fifo))
    assert v.row == "verifier-blocked" and "/app/in" in (v.broke or "")


def test_unused_planted_file_is_informational_and_unreadable_layer_fails_the_gate():
    unused = RunnerEvidence(source="upperdir", files=[RunnerFile(path="/usr/local/bin/bash", change="added",
                                                                 role="runner-command", used=False)])
    assert [k for k, _ in runner_flags(unused)] == ["system-changed"]
    assert decide(ev(report=report(timed_out=True), runner=unused)).row == "verifier-timeout"
    unknown = RunnerEvidence(source="none", problem="docker diff failed", incomplete=True)
    assert [k for k, _ in runner_flags(unknown)] == ["toolchain-changed"]


def test_judge_doc_case_table_names_the_same_rows_in_the_same_order():
    page = (Path(__file__).resolve().parents[1] / "docs" / "judge.md").read_text()
    section = page.split("<!-- verdict-table -->")[1]
    names = re.findall(r"^\| `([a-z-]+)` \|", section, re.M)
    assert names == [name for name, _, _ in ROWS]


@pytest.mark.parametrize("how", [dict(signal=9, oom_kills=2), dict(signal=9, oom_kills=None), dict(signal=11, oom_kills=0),
                                 dict(signal=15, oom_kills=0), dict(signal=9, oom_kills=0, ran_next_to=[])])
def test_test_sh_killed_by_the_oom_killer_a_crash_its_own_trap_or_with_no_agent_process_keeps_its_reward(how):
    """SIGKILL with OOM kills counted (or the count unknown), a fault of test.sh's own (SIGSEGV),
    SIGTERM (``trap 'kill 0' EXIT`` ends an honest test.sh so), or no process of the agent's to
    have sent it: test.sh's reward stands."""
    v = decide(ev(report=report(**{"ran_next_to": SERVICE, **how}), reading=ONE))
    assert (v.row, v.broke) == ("scored", None), v
