"""A host agent's command whose output is a sparse terabyte (``truncate -s 1T /dev/stdout``): tbflow
reads the first ``max_output_bytes`` of it and reports its size, and the copy out is shut at once
(left open, the engine kept archiving into it holding the container's lock, and every later call
on the container hung: issue 29). The agent's next command runs and the trial is scored."""

import json
import textwrap

from host_plugin_source import REFERENCE_BASE
from task_factory import make_task, record_of

PLUGIN = REFERENCE_BASE + textwrap.dedent('''\
    class Huge(_Base):
        name = "huge-output"

        def run(self, session):
            out = session.env.exec("echo start; truncate -s 1T /dev/stdout")
            after = session.env.exec("echo solved > /app/done.txt; echo ok")
            (session.logs_dir / "seen.json").write_text(json.dumps({
                "bytes": out.output_bytes, "kept": len(out.output), "truncated": out.truncated,
                "after": after.output, "after_exit": after.exit_code, "after_error": after.error}))
''')


def test_exec_output_of_a_terabyte_reads_its_head_and_the_next_command_runs(run_job, tmp_path):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(PLUGIN)
    make_task(tmp_path / "ds", "huge", check="test -s /app/done.txt", agent_timeout=120)
    result = run_job(tmp_path / "ds", harnesses=[f"{plugin}:Huge"])
    rec = record_of(result, "huge", "huge-output")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    seen = json.loads((tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "host-agent" / "seen.json").read_text())
    assert seen["bytes"] == 1 << 40 and seen["truncated"] and seen["kept"] <= 1024 * 1024, seen
    assert (seen["after"], seen["after_exit"], seen["after_error"]) == ("ok\n", 0, None), seen
