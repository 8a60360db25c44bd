"""A host-side plug-in (``HostHarness``) that raises in ``run``: after it reached the model it is
scored on what it did, with a ``harness-raised`` flag and its traceback as evidence; before, it is
invalid: harness with its traceback. A ``run`` that ignores the deadline is abandoned after the
grace and recorded so; the trial (and the job) go on. ``exec``'s own timeout kills that call's
session inside the container, its output comes back bounded, ``cwd``/``env`` apply, and
``upload``/``download`` round-trip. Real engine, real Prefect, the mock model."""

import json
import textwrap

from cli_model import pointed_at_mock, solvable_task
from mock_model import MockModel
from task_factory import record_of

from tasks_lib.trial import host_run

PLUGINS = textwrap.dedent('''\
    import time

    from tasks_lib.trial.harness_api import PreparedHarness
    from tasks_lib.trial.host_agent_api import HostHarness


    class _Base(HostHarness):
        version = "1.0"
        kind = "model"
        wire_api = "openai-chat"

        def prepare(self, task):
            return PreparedHarness(name=self.name, version=self.version, kind=self.kind)


    class RaiseAfter(_Base):
        name = "raise-after"

        def run(self, session):
            with session.model.http_client() as client:
                reply = client.post("/v1/chat/completions", json={
                    "model": session.model.model, "messages": [{"role": "user", "content": session.instruction}]})
                reply.raise_for_status()
            session.env.exec("echo solved > /app/done.txt")
            raise RuntimeError("boom after the model")


    class RaiseBefore(_Base):
        name = "raise-before"

        def run(self, session):
            raise ValueError("boom before the model")


    class Stuck(_Base):
        name = "stuck"
        kind = "reference"
        wire_api = None

        def run(self, session):
            session.env.exec("echo solved > /app/done.txt; sleep 1000")
            while time.monotonic() < session.deadline + 60:  # ignores session.stopped
                time.sleep(0.1)
''')


def test_host_plugin_raising_after_the_model_is_scored_flagged_before_is_invalid(run_job, tmp_path, monkeypatch):
    plugin = tmp_path / "plugins.py"
    plugin.write_text(PLUGINS)
    refs = [f"{plugin}:RaiseAfter", f"{plugin}:RaiseBefore"]
    with pointed_at_mock(monkeypatch, MockModel()):
        result = run_job(solvable_task(tmp_path / "ds", agent_timeout=120), harnesses=refs, model="mock/mock-model",
                         concurrency=2)
    after = record_of(result, "make-done", "raise-after")
    assert (after.validity.status, after.validity.reward) == ("scored", 1.0), after.validity
    assert after.validity.reached_model_by == "gateway"
    assert [f.kind for f in after.flags] == ["harness-raised"], after.flags
    assert after.flags[0].evidence == "harness-error.txt" and "RuntimeError" in after.flags[0].message
    trials = tmp_path / "jobs" / "job" / "trials"
    assert "RuntimeError: boom after the model" in (trials / after.trial_id / "harness-error.txt").read_text()
    assert after.agent.exit_code == 1 and after.agent.stderr_log == "host-agent/tbflow.log"

    before = record_of(result, "make-done", "raise-before")
    assert (before.validity.status, before.validity.kind) == ("invalid", "harness"), before.validity
    assert "plug-in harness raise-before raised ValueError: boom before the model" in before.validity.reason
    assert before.validity.evidence == "harness-error.txt"
    assert "ValueError: boom before the model" in (trials / before.trial_id / "harness-error.txt").read_text()


def test_host_loop_that_ignores_the_deadline_is_abandoned_not_waited_for(run_job, tmp_path, monkeypatch):
    monkeypatch.setattr(host_run, "GRACE_SEC", 1.0)
    plugin = tmp_path / "plugins.py"
    plugin.write_text(PLUGINS)
    result = run_job(solvable_task(tmp_path / "ds", agent_timeout=5), harnesses=[f"{plugin}:Stuck"])
    rec = record_of(result, "make-done", "stuck")
    assert rec.agent.abandoned and rec.agent.timed_out and rec.agent.exit_code is None, rec.agent
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), rec.validity
    assert any("sleep 1000" in p.command for p in rec.kill.killed), rec.kill
    log = (tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "host-agent" / "tbflow.log").read_text()
    assert "abandoned" in log


ENV_PROBE = textwrap.dedent('''\
    import json
    from pathlib import Path

    from tasks_lib.trial.harness_api import PreparedHarness
    from tasks_lib.trial.host_agent_api import HostHarness


    class EnvProbe(HostHarness):
        name, version, kind = "env-probe", "1.0", "reference"

        def prepare(self, task):
            return PreparedHarness(name=self.name, version=self.version, kind=self.kind)

        def run(self, session):
            env, out = session.env, {}
            slow = env.exec("sleep 1000", timeout=2)
            out["slow"] = [slow.timed_out, slow.duration_sec]
            out["after"] = env.exec("for d in /proc/[0-9]*; do tr '\\\\000' ' ' < $d/cmdline; echo; done").output
            big = env.exec("head -c 3000000 /dev/zero | tr '\\\\000' x")
            out["big"] = [big.exit_code, big.truncated, big.output_bytes, len(big.output)]
            plain = env.exec("echo $X; pwd; id -un; exit 3", cwd="/tmp", env={"X": "from-exec"})
            out["plain"] = [plain.exit_code, plain.output]
            src = session.logs_dir / "up.txt"
            src.write_text("uploaded")
            env.upload(src, "/app/up.txt")
            env.exec("cp /app/up.txt /app/down.txt; echo solved > /app/done.txt")
            env.download("/app/down.txt", session.logs_dir / "down.txt")
            (session.logs_dir / "probe.json").write_text(json.dumps(out))
''')


def test_host_exec_timeout_kills_its_own_session_and_output_is_bounded(run_job, tmp_path):
    plugin = tmp_path / "probe.py"
    plugin.write_text(ENV_PROBE)
    result = run_job(solvable_task(tmp_path / "ds", agent_timeout=120), harnesses=[f"{plugin}:EnvProbe"])
    rec = record_of(result, "make-done", "env-probe")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (rec.validity, rec.agent)
    assert rec.agent.exit_code == 0 and not rec.agent.timed_out
    logs = tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "host-agent"
    probe = json.loads((logs / "probe.json").read_text())
    assert probe["slow"][0] is True and probe["slow"][1] < 2 + 15
    assert "sleep 1000" not in probe["after"]  # the call's timeout killed it inside the container
    assert probe["big"] == [0, True, 3_000_000, 1024 * 1024]
    assert probe["plain"] == [3, "from-exec\n/tmp\nroot\n"]
    assert (logs / "down.txt").read_text() == "uploaded"
    assert not rec.kill.cut_off and rec.kill.left_running == []
