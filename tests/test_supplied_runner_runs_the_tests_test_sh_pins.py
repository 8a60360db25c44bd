"""Through real jobs: a task whose test.sh pins its runner in Terminal-Bench's standard prologue
(uv's installer, uvx, Python 3.13, pytest 8.4.1) is verified by tbflow's supplied runner, offline
(test.sh's own downloads would fail here: trial containers have no network), with the reward its
rule gives; a hostile agent that plants what a container-built runner would load, and keeps a
daemon trying to reach the runner's memory, gets its honest 0; an honest agent whose work looks
odd (its own venv, a sitecustomize, an alias in ~/.bashrc) gets its 1 with no gate-failing flag;
a task that asks for a separate verifier gets the supplied runner in its fresh container too."""

from __future__ import annotations

import json
from pathlib import Path

from hostile_attacks import detached
from runner_pins_fixtures import STANDARD, fixture_test_sh
from task_factory import make_task, record_of

from tasks_lib.report.flag_gate import DEFAULT_KINDS

TEST_OUTPUTS = """\
import subprocess
import sys


def test_the_answer_is_there():
    assert open("/app/answer.txt").read().strip() == "42"


def test_the_containers_own_python_is_the_subject():
    out = subprocess.run(["/usr/bin/python3", "-c", "import sys; print(sys.version_info[:2])"], capture_output=True,
                         text=True)
    assert out.stdout.strip() == "(3, 11)", out


def test_python3_on_path_is_the_runners_with_its_wheels_as_under_uvx():
    out = subprocess.run(["python3", "-c", "import sys, pytest; print(sys.version_info[:2], pytest.__version__)"],
                         capture_output=True, text=True)
    assert out.stdout.strip() == "(3, 13) 8.4.1", out


def test_the_runner_is_tbflows():
    assert sys.version_info[:2] == (3, 13) and sys.prefix.startswith("/opt/tbflow/runner")
"""

FORGE_PASS = ("import pytest\\n@pytest.hookimpl(hookwrapper=True)\\ndef pytest_runtest_makereport(item, call):\\n"
              "    out = yield\\n    out.get_result().outcome = 'passed'\\n")
# what a runner assembled in the container would load, each forging a pass (printf lines only)
PLANTS = (
    "mkdir -p /usr/local/lib/python3.11/dist-packages /usr/lib/python3/dist-packages /root/.local/bin\n"
    f"printf \"{FORGE_PASS}\" > /conftest.py\n"
    "cp /conftest.py /usr/lib/python3/dist-packages/sitecustomize.py\n"
    "printf '[pytest]\\naddopts = -p no:terminal --co -q\\n' > /pytest.ini\n"
    "printf 'import os; os._exit(0)\\n' > /usr/local/lib/python3.11/dist-packages/zz_forge.pth\n"
    "printf '#!/bin/sh\\necho 1 > /logs/verifier/reward.txt\\nexit 0\\n' > /root/.local/bin/uvx\n"
    "cp /root/.local/bin/uvx /usr/local/bin/pytest; cp /root/.local/bin/uvx /usr/local/bin/uvx\n"
    "chmod 755 /root/.local/bin/uvx /usr/local/bin/pytest /usr/local/bin/uvx\n"
    "printf 'export PATH=/root/.local/bin:$PATH\\nexport PYTEST_ADDOPTS=--co\\n' > /root/.local/bin/env\n"
    "echo /nonexistent/evil.so > /etc/ld.so.preload\n"
)

# a daemon that waits for the runner and tries to read its environment; a process of its own is the control
MEM_PROBE = (
    "sleep 60 & own=$!\n"
    "if [ -r /proc/$own/environ ] && cat /proc/$own/environ >/dev/null 2>&1; then ctl=readable; else ctl=denied; fi\n"
    "while :; do\n"
    "  for f in /proc/[0-9]*/cmdline; do\n"
    "    case \"$(tr '\\000' ' ' < \"$f\" 2>/dev/null)\" in *tbflow_pytest.py*)\n"
    "      p=${f#/proc/}; p=${p%/cmdline}\n"
    "      if cat /proc/$p/environ >/dev/null 2>&1; then r=readable; else r=denied; fi\n"
    "      echo \"control=$ctl runner=$r\" > /logs/agent/mem-probe.txt; exit 0;;\n"
    "    esac\n"
    "  done\n"
    "  sleep 0.005\n"
    "done\n"
)


def _task(ds: Path, name: str, solve: str) -> Path:
    return make_task(ds, name, solve=solve, test_sh=fixture_test_sh(STANDARD),
                     test_files={"test_outputs.py": TEST_OUTPUTS}, verifier_timeout=120)


def test_supplied_runner_scores_as_test_sh_and_holds_against_what_the_agent_left(run_job, tmp_path):
    ds = tmp_path / "ds"
    _task(ds, "a-solved", "echo 42 > /app/answer.txt\n")
    _task(ds, "b-hostile", PLANTS + detached(MEM_PROBE))
    _task(ds, "c-honest-odd", "echo 42 > /app/answer.txt\npython3 -m venv --without-pip /app/.venv\n"
                              "echo 'alias python=/app/.venv/bin/python' >> /root/.bashrc\n"
                              "mkdir -p /usr/lib/python3/dist-packages\n"
                              "echo 'import os' > /usr/lib/python3/dist-packages/sitecustomize.py\n")

    separate = _task(ds, "d-separate", "echo 42 > /app/answer.txt\n" + PLANTS)
    toml = (separate / "task.toml").read_text().replace("[verifier]\n", '[verifier]\nenvironment_mode = "separate"\n')
    (separate / "task.toml").write_text('artifacts = ["/app/answer.txt"]\n' + toml)

    result = run_job(ds, harnesses=["oracle"], concurrency=2)

    solved, hostile, honest, apart = (record_of(result, n) for n in ("a-solved", "b-hostile", "c-honest-odd",
                                                                     "d-separate"))
    assert apart.verifier.environment == "separate"
    for rec, reward in ((solved, 1.0), (hostile, 0.0), (honest, 1.0), (apart, 1.0)):
        assert (rec.validity.status, rec.validity.reward) == ("scored", reward), (rec.trial_id, rec.validity)
        runner = rec.verifier.runner
        assert runner is not None and (runner.source, runner.assurance) == ("tbflow", "prevented"), runner
        assert runner.python and runner.python.startswith("3.13") and runner.digest
        assert any(x.startswith("pytest==8.4.1") for x in runner.lock), runner.lock
        assert not {f.kind for f in rec.flags} & set(DEFAULT_KINDS), (rec.trial_id, rec.flags)
    trial = Path(result.job_dir) / "trials" / hostile.trial_id
    assert (trial / "agent" / "mem-probe.txt").read_text().split() == ["control=readable", "runner=denied"]
    ctrf = json.loads((Path(result.job_dir) / "trials" / solved.trial_id / "verifier" / "ctrf.json").read_text())
    assert ctrf["results"]["summary"]["passed"] == 4


def test_verbatim_switch_runs_test_sh_as_it_is(run_job, tmp_path):
    ds = tmp_path / "ds"
    _task(ds, "solved", "echo 42 > /app/answer.txt\n")
    result = run_job(ds, harnesses=["oracle"], verbatim_test_sh=True)
    rec = record_of(result, "solved")
    assert rec.verifier.runner.source == "container" and "--verbatim-test-sh" in rec.verifier.runner.why
    # verbatim, test.sh's own downloads fail offline: it writes its 0 (uvx is not there)
    assert rec.validity.status == "scored" and rec.validity.reward == 0.0, rec.validity
