"""The example plug-in (examples/harness-plugin), installed as a user installs it, runs through
``tbflow run`` by its entry-point names and scores: ``replay`` (a command in the container) and
``host-replay`` (a host-side loop acting through ``session.env``, its event log on the host); a file plug-in whose ``prepare`` raises is
invalid: harness with its traceback in the trial dir, never a tbflow error nor the environment's.
Both trial records say where their harness came from."""

import json
import os
import subprocess

import pytest

from plugin_fixtures import harness_source, install_example
from task_factory import make_task
from tasks_lib.store.job_store import JobStore
from tbflow_process import ROOT, TBFLOW

pytestmark = pytest.mark.docker


def test_example_plugin_scores_and_a_raising_plugin_is_invalid_harness(docker_ready, tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    project = install_example(site)
    bad = tmp_path / "plugins" / "bad_plugin.py"
    bad.parent.mkdir()
    bad.write_text(harness_source(cls="BadPrepare", name="bad-prepare",
                                  prepare="raise RuntimeError('plug-in bug in prepare')"))
    ds = tmp_path / "ds"
    make_task(ds, "one", solve="echo ok > /app/done\n", check="[ -f /app/done ]")
    jobs = tmp_path / "jobs"
    res = subprocess.run([*TBFLOW, "run", str(ds), "--harness", "replay", "--harness", "host-replay",
                          "--harness", f"{bad}:BadPrepare",
                          "--jobs-dir", str(jobs), "--job-name", "j"], cwd=ROOT, capture_output=True, text=True,
                         env=dict(os.environ, PYTHONPATH=str(site)), timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    store = JobStore(jobs / "j")

    replay = store.read_trial("one.replay.1")
    assert replay is not None and replay.validity.status == "scored" and replay.validity.reward == 1.0
    assert replay.harness_source is not None
    assert (replay.harness_source.origin, replay.harness_source.distribution,
            replay.harness_source.distribution_version) == ("entry-point", project["name"], project["version"])
    assert "replay: running the solution of one" in (store.trial_dir("one.replay.1") / "agent" / "replay.txt").read_text()

    host = store.read_trial("one.host-replay.1")
    assert host is not None and (host.validity.status, host.validity.reward) == ("scored", 1.0), host.validity
    assert host.harness_source is not None and host.harness_source.origin == "entry-point"
    assert host.agent is not None and host.agent.exit_code == 0 and host.agent.stdout_log == "host-agent/events.jsonl"
    events = [json.loads(line) for line in (store.trial_dir("one.host-replay.1") / "host-agent" / "events.jsonl")
              .read_text().splitlines()]
    assert [e["event"] for e in events] == ["start", "exec", "end"]
    assert events[1]["exit_code"] == 0 and not events[1]["timed_out"], events[1]

    broken = store.read_trial("one.bad-prepare.1")
    assert broken is not None and broken.spec.harness_ref == f"{bad}:BadPrepare"
    assert (broken.validity.status, broken.validity.kind) == ("invalid", "harness"), broken.validity
    assert broken.validity.evidence == "harness-error.txt"
    assert "plug-in harness bad-prepare raised RuntimeError: plug-in bug in prepare" in (broken.validity.reason or "")
    tb = (store.trial_dir("one.bad-prepare.1") / "harness-error.txt").read_text()
    assert "Traceback" in tb and "bad_plugin.py" in tb and "RuntimeError: plug-in bug in prepare" in tb
    assert broken.harness_source is not None and broken.harness_source.origin == "file"
    assert broken.harness_source.target == "bad_plugin.py:BadPrepare"
