"""An agent cut off at its timeout: the timeout is recorded, its session and background jobs are
killed before the verifier runs, and a daemon that detached itself (own session, re-parented
away from the agent, as a double fork does) survives. The image has no
python and no procps, so the process tool must work with plain /bin/sh and /proc."""

from task_factory import make_task, record_of

NO_PYTHON = "FROM tbflow/base:bookworm\nWORKDIR /app\nRUN rm -f /usr/bin/python3* && ! command -v ps\n"

SOLVE = """\
(sleep 10; echo late > /app/x) &
setsid sh -c 'sleep 1000 & echo $! > /app/daemon.pid' < /dev/null > /dev/null 2>&1 &
sleep 600
"""

# The agent is cut off at 4 s; its background job would write at 10 s, well after the kill even on
# a loaded machine. The verifier waits past those 10 s, then reports what it sees.
VERIFY = r"""#!/bin/sh
sleep 11
facts=/logs/verifier/facts.txt
: > $facts
[ -e /app/x ] && echo late-write >> $facts
for d in /proc/[0-9]*; do
  c=$(tr '\000' ' ' < $d/cmdline 2>/dev/null)
  case "$c" in "sleep 600"*) echo agent-alive >> $facts ;; esac
done
[ -d /proc/$(cat /app/daemon.pid) ] && echo daemon-alive >> $facts
echo 1 > /logs/verifier/reward.txt
"""


def test_cut_off_agent_is_killed_before_verifier(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "sleeper", solve=SOLVE, test_sh=VERIFY, dockerfile=NO_PYTHON, agent_timeout=4, verifier_timeout=60)
    result = run_job(ds)
    rec = record_of(result, "sleeper")
    assert rec.agent.timed_out
    assert rec.agent.exit_code is None or rec.agent.exit_code != 0
    assert rec.agent.duration_sec < 4 + 10
    assert rec.kill.cut_off
    killed = " | ".join(p.command for p in rec.kill.killed)
    assert "sleep 600" in killed and "sleep 10" in killed, killed
    assert not any("sleep 600" in p.command for p in rec.kill.left_running)
    assert any("sleep 1000" in p.command for p in rec.kill.left_running), rec.kill.left_running
    facts = (tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "verifier" / "facts.txt").read_text().split()
    assert "late-write" not in facts
    assert "agent-alive" not in facts
    assert "daemon-alive" in facts
    # a reference harness that ran is scored, timeout or not
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0)


def test_agent_that_finishes_keeps_background_jobs_and_daemons(run_job, tmp_path):
    ds = tmp_path / "ds"
    solve = ("nohup sleep 700 >/dev/null 2>&1 &\n"
             "setsid sh -c 'sleep 1000 &' < /dev/null > /dev/null 2>&1 &\n")
    verify = ("#!/bin/sh\nfound=0\nfor d in /proc/[0-9]*; do c=$(tr '\\000' ' ' < $d/cmdline 2>/dev/null); "
              "case \"$c\" in 'sleep 700'*) found=$((found+1));; 'sleep 1000'*) found=$((found+1));; esac; done\n"
              "[ $found = 2 ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt\n")
    make_task(ds, "leaves", solve=solve, test_sh=verify, dockerfile=NO_PYTHON)
    rec = record_of(run_job(ds), "leaves")
    assert not rec.agent.timed_out and rec.agent.exit_code == 0
    assert not rec.kill.cut_off and rec.kill.killed == []
    left = " | ".join(p.command for p in rec.kill.left_running)
    assert "sleep 700" in left and "sleep 1000" in left
    assert rec.validity.reward == 1.0
