"""What the agent leaves for the judge can neither overflow its channel nor block its repairs, and
a hung test.sh leaves evidence of what it waited on (issue #27, item 4).

One job, real Docker and the real judge. Each task is solved (test.sh writes 1) unless said
otherwise; the agent's solve.sh leaves something in the judge's way:

* 200 pre-written ``reward.*`` files of 64 KiB each in /logs/verifier (12.8 MiB: they overflowed
  the host's 8 MiB read of the channel, so the run was "not complete" and the solved task scored 0);
* a directory tree 100 and 5000 deep in /logs/verifier, and one where /dev/null was (the old
  removal stopped at depth 64, the fresh directory could not be made, "fail", scored 0);
* test.sh blocked on a FIFO the agent made, stopped by a leftover process, or running next to a
  leftover that burns CPU or sleeps: the judge's report says so (``stuck``, ``agent_cpu_sec``).
"""

from __future__ import annotations

import os

import pytest

from hostile_attacks import FIND, detached
from task_factory import job_result, make_task, record_of

pytestmark = pytest.mark.docker

REWARD_1 = "#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n"
PREWRITTEN = ("for i in $(seq 200); do head -c 65536 /dev/zero | tr '\\0' x > /logs/verifier/reward.$i; done\n"
              "echo 0 > /logs/verifier/reward.txt\n")
DEEP_100 = "mkdir -p /logs/verifier/$(printf 'd/%.0s' $(seq 100))x\necho x > /logs/verifier/d/f\n"
DEEP_5000 = "cd /logs/verifier\nfor i in $(seq 5000); do mkdir d && cd d || exit 1; done\necho x > f\n"
DEV_NULL_TREE = "rm -f /dev/null\nmkdir -p /dev/null/$(printf 'd/%.0s' $(seq 100))x\n"
# the spinner's pid in /tmp/spin.pid; test.sh ends once it has used CPU (an event, not a guess)
SPINNER = detached("echo $$ > /tmp/spin.pid; while :; do :; done")
WAIT_FOR_SPIN = ("#!/bin/bash\np=$(cat /tmp/spin.pid)\nticks() { read -ra f < /proc/$p/stat; echo $((f[13] + f[14])); }\n"
                 "t0=$(ticks)\nfor i in $(seq 600); do [ $(( $(ticks) - t0 )) -ge 5 ] && break; sleep 0.05; done\n"
                 "echo 1 > /logs/verifier/reward.txt\n")
IDLE = detached("exec sleep 1000")
STOPPER = detached('p=$(find_proc "bash /tests/test.sh"); while :; do kill -STOP "$p" 2>/dev/null; sleep 0.05; done')

TASKS = {
    "prewritten-200": dict(solve=PREWRITTEN, test_sh=REWARD_1),
    "deep-100": dict(solve=DEEP_100, test_sh=REWARD_1),
    "deep-5000": dict(solve=DEEP_5000, test_sh=REWARD_1),
    "dev-null-tree": dict(solve=DEV_NULL_TREE, test_sh="#!/bin/bash\necho noise > /dev/null && echo 1 > "
                                                       "/logs/verifier/reward.txt\n"),
    "fifo-input": dict(solve="mkfifo /app/input\n", verifier_timeout=3,
                       test_sh="#!/bin/bash\ncat /app/input\necho 1 > /logs/verifier/reward.txt\n"),
    "stopped-test-sh": dict(solve=STOPPER, verifier_timeout=4,
                            test_sh="#!/bin/bash\nsleep 30\necho 1 > /logs/verifier/reward.txt\n"),
    "busy-leftover": dict(solve=SPINNER, test_sh=WAIT_FOR_SPIN),
    "idle-leftover": dict(solve=IDLE, test_sh="#!/bin/bash\nsleep 0.5\necho 1 > /logs/verifier/reward.txt\n"),
}
assert FIND in STOPPER  # find_proc comes with detached()


@pytest.fixture(scope="module")
def judged(docker_ready, prefect_local, tmp_path_factory):
    """(job result, {task: the judge's verify run}): every run of the judge is kept as it came."""
    from flows.job.job_config import JobConfig
    from tasks_lib.trial import verifier_stage

    root = tmp_path_factory.mktemp("judge-budget")
    for name, kw in TASKS.items():
        make_task(root / "ds", name, **{"verifier_timeout": 30, **kw})
    runs: dict[str, object] = {}
    real = verifier_stage.run_judge

    def kept(sandbox, task, *a, **kw):
        run = real(sandbox, task, *a, **kw)
        runs[task.tests_dir.parent.name] = run
        return run

    old = os.environ.get("TBFLOW_HISTORY")
    os.environ["TBFLOW_HISTORY"] = str(root / "history.sqlite")
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(verifier_stage, "run_judge", kept)
            result = job_result(**JobConfig(dataset=str(root / "ds"), jobs_dir=str(root / "jobs"), job_name="job",
                                            concurrency=4, env_retries=0).flow_parameters())
    finally:
        os.environ.pop("TBFLOW_HISTORY") if old is None else os.environ.__setitem__("TBFLOW_HISTORY", old)
    return result, runs


def _report(judged, name):
    from tasks_lib.judge.judge_report import parse_report

    run = judged[1][name]
    assert run.complete, (name, run.channel.problem, run.exit_code, run.overflow, run.stderr[-2000:])
    return parse_report(run.channel)


def _solved(judged, name):
    rec = record_of(judged[0], name)
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (name, rec.validity, rec.flags)
    assert "broke-container" not in [f.kind for f in rec.flags], rec.flags
    return rec


def test_200_prewritten_reward_files_of_64_kib_no_longer_overflow_the_channel_and_zero_a_solved_task(judged):
    rec = _solved(judged, "prewritten-200")
    report = _report(judged, "prewritten-200")
    assert len(judged[1]["prewritten-200"].stdout) < 1024 * 1024
    assert report.files["reward.txt"].data == b"1\n"
    # still shown as tampering: reward.txt in full (tampering.py reads its bytes), the rest by head, then a count
    assert report.prewritten["reward.txt"].data == b"0\n"
    others = {n: f for n, f in report.prewritten.items() if n != "reward.txt"}
    assert len(others) == 64 and report.omitted["pre"] == 136
    assert all(f.size == 65536 and f.data == b"x" * 256 for f in others.values())
    messages = [f.message for f in rec.flags if f.kind == "tampering"]
    assert "reward.txt was written before the verifier started (removed before test.sh ran)" in messages
    assert any(m.startswith("136 more reward.* entries") for m in messages), messages


@pytest.mark.parametrize("name", ["deep-100", "deep-5000"])
def test_tree_deeper_than_64_in_logs_verifier_no_longer_blocks_the_fresh_dir_and_zeroes_a_solved_task(judged, name):
    rec = _solved(judged, name)
    messages = [f.message for f in rec.flags if f.kind == "tampering"]  # issue 38: it was set aside unflagged
    assert any(m.startswith("/logs/verifier held 1 entry other than reward.*") for m in messages), rec.flags
    report = _report(judged, name)
    assert report.failure is None and report.files["reward.txt"].data == b"1\n"
    assert report.trash == []  # removed whole within the budget, nothing left beside /logs/verifier


def test_deep_tree_in_place_of_dev_null_is_set_aside_and_the_device_made(judged):
    rec = _solved(judged, "dev-null-tree")
    report = _report(judged, "dev-null-tree")
    assert "/dev/null was replaced by a directory; tbflow recreated the device" in report.notes
    assert any("/dev/null was replaced by a directory" in f.message for f in rec.flags), rec.flags


def test_test_sh_blocked_on_the_agents_fifo_is_reported_stuck_with_the_fifo_path(judged):
    report = _report(judged, "fifo-input")
    assert report.timed_out
    cats = [p for p in report.stuck if p.exe.endswith("/cat")]
    assert cats and cats[0].fifo_paths == ["/app/input"], report.stuck
    assert cats[0].state in "SD", cats


def test_test_sh_stopped_by_a_leftover_agent_process_shows_state_t(judged):
    report = _report(judged, "stopped-test-sh")
    assert report.timed_out
    assert any(p.state in "Tt" for p in report.stuck), report.stuck
    assert report.ran_next_to  # the stopper is listed as a process the verifier ran next to


def test_agent_cpu_of_leftovers_is_measured_busy_above_zero_idle_near_zero(judged):
    busy, idle = _report(judged, "busy-leftover"), _report(judged, "idle-leftover")
    assert busy.agent_cpu_sec is not None and busy.agent_cpu_sec > 0
    assert idle.agent_cpu_sec is not None and idle.agent_cpu_sec < 0.05
    assert any("sleep 1000" in p.command for p in idle.ran_next_to)
