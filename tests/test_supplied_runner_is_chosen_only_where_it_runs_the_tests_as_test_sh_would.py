"""tbflow supplies the verifier's runner only where it runs the tests as test.sh would; everywhere
else test.sh runs verbatim, and the record says why (runner_plan, runner_reading: pure)."""

from __future__ import annotations

import pytest

from runner_pins_fixtures import STANDARD, fixture_test_sh

from tasks_lib.records.record_models import VerifierRunner
from tasks_lib.task.runner_pins import read_runner_pins
from tasks_lib.judge.judge_report import JudgeReport
from tasks_lib.trial.runner_plan import MOUNT, plan_runner, why_not_supplied
from tasks_lib.trial.runner_reading import runner_for_run, supplied_reading

TESTS = {"test.sh": fixture_test_sh(STANDARD), "test_outputs.py": "def test_x():\n    assert open('/app/x').read()\n"}


def _why(test_sh: str = fixture_test_sh(STANDARD), files: dict | None = None, env: dict | None = None,
         verbatim: bool = False) -> str | None:
    files = {**TESTS, "test.sh": test_sh, **(files or {})}
    return why_not_supplied(read_runner_pins(test_sh), files, env or {}, verbatim)


def test_standard_prologue_gets_the_supplied_runner_with_its_own_pytest_arguments():
    assert _why() is None
    plan = plan_runner(read_runner_pins(fixture_test_sh(STANDARD)), TESTS)
    assert plan.python == "3.13" and plan.wheels == ["pytest==8.4.1", "pytest-json-ctrf==0.3.5"]
    assert plan.argv[:7] == [f"{MOUNT}/bin/python3.13", "-I", "-S", "-B", "-X", "utf8", f"{MOUNT}/tbflow_pytest.py"]
    # pytest never looks above /tests for a configuration or a conftest.py (the agent writes there)
    assert plan.argv[7:13] == ["-c", f"{MOUNT}/pytest.ini", "--rootdir=/tests", "--confcutdir=/tests", "-p",
                               "no:cacheprovider"]
    assert plan.argv[13:] == ["--ctrf", "/logs/verifier/ctrf.json", "/tests/test_outputs.py", "-rA"]
    assert (plan.reward_path, plan.on_pass, plan.on_fail, plan.checks_workdir) == (
        "/logs/verifier/reward.txt", "1", "0", True)


def test_the_tests_own_pytest_configuration_is_the_one_used():
    plan = plan_runner(read_runner_pins(fixture_test_sh(STANDARD)), {**TESTS, "pytest.ini": "[pytest]\n"})
    assert plan.argv[7:9] == ["-c", "/tests/pytest.ini"]


@pytest.mark.parametrize("kwargs, reason", [
    ({"verbatim": True}, "--verbatim-test-sh"),
    ({"test_sh": fixture_test_sh("image_python")}, "does not pin its runner: line"),
    ({"test_sh": fixture_test_sh("apt_expect")}, "installs expect, tmux into the container"),
    ({"files": {"test_outputs.py": "subprocess.run(['curl', 'http://localhost:8000'])\n"}}, "installs curl"),
    ({"test_sh": fixture_test_sh("cp_setup")}, "setup commands"),
    ({"env": {"PYTHONPATH": "/app", "LD_PRELOAD": "/x.so"}}, "LD_PRELOAD, PYTHONPATH"),
    ({"test_sh": fixture_test_sh(STANDARD).replace("-p 3.13", "-p 3.12")}, "Python 3.12"),
])
def test_what_the_supplied_runner_cannot_reproduce_keeps_test_sh_verbatim(kwargs, reason):
    why = _why(**kwargs)
    assert why is not None and reason in why, why


def _runner(**kw) -> VerifierRunner:
    return VerifierRunner(source="tbflow", why="pinned", argv=["x"], checks_workdir=True, **kw)


@pytest.mark.parametrize("exit_code, signal, reward", [(0, None, 1.0), (1, None, 0.0), (2, None, 0.0),
                                                       (None, 9, 0.0), (None, None, None)])
def test_reward_is_test_sh_s_rule_over_the_exit_the_judge_reported(exit_code, signal, reward):
    reading = supplied_reading(JudgeReport(started=True, exit_code=exit_code, signal=signal), _runner())
    assert reading.reward == reward


def test_a_reward_json_rule_reads_as_json():
    reading = supplied_reading(JudgeReport(started=True, exit_code=0),
                               _runner(reward_path="/logs/verifier/reward.json", on_pass='{"reward": 1}'))
    assert reading.rewards == {"reward": 1.0}


def test_working_directory_slash_runs_test_sh_verbatim_which_refuses_it():
    assert runner_for_run(_runner(), "/").source == "container"
    assert runner_for_run(_runner(), "/app").source == "tbflow"
    assert runner_for_run(_runner(cwd="/tests"), "/").source == "tbflow"
    assert runner_for_run(None, "/app").why == "no runner was chosen for this trial"
