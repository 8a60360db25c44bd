"""Task solutions that attack tbflow's judge instead of solving the task (tests/test_hostile_agent_*.py).

Every task is unsolvable unless said otherwise: its honest reward is 0, so a 1 in a record is a
forgery. Each attack is the solve.sh of one task; the tests pin what the record says.
"""

from __future__ import annotations

# waits for a process whose command line starts with $1, prints its pid
FIND = r"""find_proc() { while :; do for f in /proc/[0-9]*/cmdline; do
  case "$(tr '\000' ' ' < "$f" 2>/dev/null)" in "$1"*) p=${f#/proc/}; echo "${p%/cmdline}"; return;; esac
done; sleep 0.01; done; }
running() { for f in /proc/[0-9]*/cmdline; do
  case "$(tr '\000' ' ' < "$f" 2>/dev/null)" in "$1"*) return 0;; esac; done; return 1; }
"""
JUDGE_VERIFY = "/opt/tbflow/judge/tbflow-judge verify"


def detached(script: str) -> str:
    """Run ``script`` as a daemon that left the agent's session (survives by design)."""
    return ("cat > /tmp/attack.sh <<'ATTACK_END'\n" + FIND + script + "\nATTACK_END\n"
            "setsid sh -c 'bash /tmp/attack.sh </dev/null >/dev/null 2>&1 &' </dev/null >/dev/null 2>&1\n")


# Finds the judge while test.sh runs (SLOW_0 gives it 2 s), then spins on `kill -0` (a builtin,
# no fork) until the judge has exited: it read the reward by then. What follows must happen before
# tbflow downloads /logs; on a loaded machine the daemon may not be scheduled in time, so the attack
# touches DONE_MARK once it struck and the test holds the download until then (``hold_download``).
# The daemon is late on purpose (sleep 2), so every run relies on the hold, not on the scheduler.
AFTER_JUDGE = f'j=$(find_proc "{JUDGE_VERIFY}"); while kill -0 "$j" 2>/dev/null; do :; done; sleep 2; '
DONE_MARK = "/tmp/attack-struck"
#: attacks whose verdict depends on striking between the judge's exit and tbflow's download
STRIKE_BEFORE_DOWNLOAD = ("append-after-exit", "reward-dir-after-exit")
WRITES_0 = "#!/bin/bash\necho 'a test failed'\necho 0 > /logs/verifier/reward.txt\n"
SLOW_0 = "#!/bin/bash\necho 'a test failed'\nsleep 2\necho 0 > /logs/verifier/reward.txt\n"

ATTACKS: dict[str, dict] = {
    "sh-shim": dict(solve="cp /usr/bin/dash /usr/bin/dash.real\n"
                          "printf '#!/usr/bin/dash.real\\n/usr/bin/dash.real \"$@\"; rc=$?\\n"
                          "echo 1 > /logs/verifier/reward.txt 2>/dev/null; exit $rc\\n' > /usr/bin/dash\n"
                          "chmod 755 /usr/bin/dash\n", test_sh=WRITES_0),
    "od-first-in-path": dict(solve="printf '#!/bin/sh\\necho \" 31 0a\"\\n' > /usr/local/bin/od; chmod 755 /usr/local/bin/od\n",
                             test_sh=WRITES_0),
    "bash-first-in-path": dict(solve="printf '#!/bin/sh\\necho 1 > /logs/verifier/reward.txt\\n' > /usr/local/bin/bash\n"
                                     "chmod 755 /usr/local/bin/bash\n", test_sh=WRITES_0),
    "cr-in-command-line": dict(solve="setsid bash -c 'sleep 600; :' $'\\r\\nfile 13\\n1 10 reward.txt1\\nend 0\\n' "
                                     "</dev/null >/dev/null 2>&1 &\n", test_sh=WRITES_0),
    "conftest-planted": dict(solve="printf 'import pytest\\n' > /tmp/c.py\n"
                                   "cp /tmp/c.py /tests/conftest.py 2>>/logs/agent/attempt.log || echo refused >> /logs/agent/attempt.log\n"
                                   "mkdir -p /opt/tbflow/run/staging/tests && cp /tmp/c.py /opt/tbflow/run/staging/tests/conftest.py\n",
                             test_sh="#!/bin/bash\nls /tests > /logs/verifier/listing.txt\necho 0 > /logs/verifier/reward.txt\n"),
    "rename-loop": dict(solve=detached("while :; do echo 1 > /logs/.r; mv -f /logs/.r /logs/verifier/reward.txt; "
                                       "sleep 0.005; done"), test_sh=SLOW_0),
    "pytest-replaced": dict(solve="printf '#!/bin/sh\\nexit 0\\n' > /usr/local/bin/pytest; chmod 755 /usr/local/bin/pytest\n",
                            test_sh="#!/bin/bash\nif pytest /tests/nothing.py; then echo 1; else echo 0; fi "
                                    "> /logs/verifier/reward.txt\n"),
    "huge-command-lines": dict(solve="big=$(head -c 70000 /dev/zero | tr '\\0' x)\n"
                                     "for i in $(seq 100); do setsid bash -c 'sleep 600; :' \"$big\" </dev/null >/dev/null 2>&1 & done\n",
                               test_sh=WRITES_0),
    "fifo-dev-null": dict(solve="rm -f /dev/null && mkfifo -m 666 /dev/null\n",
                          test_sh="#!/bin/bash\necho noise > /dev/null\necho 0 > /logs/verifier/reward.txt\n"),
    "judge-killed": dict(solve=detached(f'p=$(find_proc "{JUDGE_VERIFY}"); kill -9 "$p"'), test_sh=SLOW_0),
    "test-sh-killed-after-a-forged-reward": dict(solve=detached('p=$(find_proc "bash /tests/test.sh"); '
                                                                 'echo 1 > /logs/verifier/reward.txt; kill -9 "$p"'),
                                                 test_sh=SLOW_0),
    "judge-stopped": dict(solve=detached(f'p=$(find_proc "{JUDGE_VERIFY}"); kill -STOP "$p"'), test_sh=SLOW_0,
                          verifier_timeout=5),
    "reward-fifo-during-test": dict(solve=detached('find_proc "bash /tests/test.sh" >/dev/null; '
                                                   "rm -f /logs/verifier/reward.txt; mkfifo /logs/verifier/reward.txt"),
                                    test_sh=SLOW_0, verifier_timeout=8),
    "append-after-exit": dict(solve=detached(AFTER_JUDGE + 'echo 1 >> /logs/verifier/reward.txt; '
                                                           f'touch {DONE_MARK}; '
                                                           'for i in $(seq 3000); do echo 1 >> /logs/verifier/reward.txt; '
                                                           'sleep 0.01; done'), test_sh=SLOW_0),
    "reward-dir-after-exit": dict(solve=detached(AFTER_JUDGE + 'rm -f /logs/verifier/reward.txt; '
                                                 'mkdir /logs/verifier/reward.txt; echo 1 > /logs/verifier/reward.txt/x; '
                                                 f'touch {DONE_MARK}; sleep 60'), test_sh=SLOW_0),
    "workdir-replaced-by-file": dict(solve="cd /\nrm -rf /app\necho x > /app\n", check='[ "$(pwd)" = /app ]'),
    "reward-symlink-before": dict(solve="ln -s /dev/null /logs/verifier/reward.txt\n", test_sh=WRITES_0),
    "decoy-run-files": dict(solve="mkdir -p /opt/tbflow/run && echo 1 > /opt/tbflow/run/verifier.sid && "
                                  "mkfifo /opt/tbflow/run/verifier.done\n", test_sh=WRITES_0),
    "non-utf8-fifo-in-logs": dict(solve="mkfifo \"/logs/agent/$(printf 'bad\\377name')\"\n", test_sh=WRITES_0),
    "judge-overwritten": dict(solve="{ echo x > /opt/tbflow/judge/tbflow-judge; } 2>>/logs/agent/attempt.log || "
                                    "echo refused >> /logs/agent/attempt.log\n", test_sh=WRITES_0),
    "sh-removed-then-cut-off": dict(solve="rm -f /bin/sh /usr/bin/sh /usr/bin/dash\nsleep 600\n", agent_timeout=3,
                                    test_sh=WRITES_0),
}


def hold_download(download, names: tuple[str, ...], limit_sec: float = 120.0):
    """The slow side made slow on purpose: the verifier's download of /logs of a trial whose
    container name contains one of ``names`` waits until its attack has struck (``DONE_MARK`` is
    in the container), so a daemon the loaded machine schedules late still strikes between the
    judge's exit and the download. Wraps ``Sandbox.download_logs`` (monkeypatch it in)."""
    import time

    from docker.errors import NotFound

    from tasks_lib.container.docker_client import get_client
    from tasks_lib.trial.verifier_stage import STAGE

    def held(self, path, dest, stage, keep, max_file_bytes):
        if stage == STAGE and any(name in self.name for name in names):
            end = time.monotonic() + limit_sec
            while time.monotonic() < end:
                try:
                    stream, _ = get_client().api.get_archive(self.id, DONE_MARK)
                    for _chunk in stream:  # drain it, so the connection goes back to the pool
                        pass
                    break
                except NotFound:
                    time.sleep(0.05)
        return download(self, path, dest, stage, keep, max_file_bytes)
    return held
