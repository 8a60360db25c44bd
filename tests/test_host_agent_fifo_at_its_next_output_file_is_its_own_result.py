"""A hostile host-side agent makes the output file of its *next* command a FIFO (the numbering of
``/logs/agent/exec/`` is predictable) and leaves a sleeper behind. The launcher then blocks
opening that file, after it reported the session. That must not hang the job nor lose the
record: the command comes back (timed out), the trial ends at its deadline, the sleeper is killed
before the verifier, and the trial is scored on what was done."""

import json
import textwrap

from task_factory import make_task, record_of

PLUGIN = textwrap.dedent('''\
    import json

    from tasks_lib.trial.harness_api import PreparedHarness
    from tasks_lib.trial.host_agent_api import HostHarness


    class FifoTrap(HostHarness):
        name = "fifo-trap"
        version = "1.0"
        kind = "reference"

        def prepare(self, task):
            return PreparedHarness(name=self.name, version=self.version, kind=self.kind)

        def run(self, session):
            first = session.env.exec("echo solved > /app/done.txt; mkfifo /logs/agent/exec/00002.txt; "
                                     "nohup sleep 1000 >/dev/null 2>&1 &")
            second = session.env.exec("echo the launcher cannot open my output")
            (session.logs_dir / "seen.json").write_text(json.dumps([first.model_dump(), second.model_dump()]))
''')

VERIFY = r"""#!/bin/sh
[ "$(cat /app/done.txt)" = solved ] || { echo 0 > /logs/verifier/reward.txt; exit 0; }
for d in /proc/[0-9]*; do
  c=$(tr '\000' ' ' < $d/cmdline 2>/dev/null)
  case "$c" in "sleep 1000"*) echo 0 > /logs/verifier/reward.txt; exit 0 ;; esac
done
echo 1 > /logs/verifier/reward.txt
"""


def test_fifo_planted_at_the_next_exec_output_neither_hangs_nor_loses_the_verdict(run_job, tmp_path):
    plugin = tmp_path / "trap.py"
    plugin.write_text(PLUGIN)
    ds = tmp_path / "ds"
    make_task(ds, "trap", test_sh=VERIFY, agent_timeout=8)
    result = run_job(ds, harnesses=[f"{plugin}:FifoTrap"])
    rec = record_of(result, "trap", "fifo-trap")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert rec.agent is not None and rec.agent.timed_out and not rec.agent.abandoned, rec.agent
    seen = json.loads((tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "host-agent" / "seen.json").read_text())
    assert seen[0]["exit_code"] == 0, seen[0]
    assert seen[1]["timed_out"] and seen[1]["output"] == "", seen[1]
