"""Variations of the standard prologue seen in TB 2.1 (bench/RESULTS.md's census) that the supplied
runner can reproduce: extra ``-w`` wheels, other apt packages (also ``&&``-joined with
DEBIAN_FRONTEND, or none), a ``cp`` setup line, ``cd /tests``, another pytest pin, ``-v``, marker
comment lines (even above the shebang), and apt after the working-directory check. Each is a
synthetic fixture of tests/fixtures/test_sh/ named after its pattern."""

from __future__ import annotations

import pytest
from runner_pins_fixtures import STANDARD, fixture_test_sh

from tasks_lib.task.runner_pins import RunnerPins, read_runner_pins


def pins_of(pattern: str) -> RunnerPins:
    pins = read_runner_pins(fixture_test_sh(pattern))
    assert isinstance(pins, RunnerPins), f"{pattern}: {pins}"
    return pins


def test_extra_wheels_are_kept_in_order():
    pins = pins_of("extra_wheels")
    assert [w.spec for w in pins.wheels] == ["pytest==8.4.1", "attrs==25.3.0", "sympy==1.14.0", "pytest-json-ctrf==0.3.5"]


@pytest.mark.parametrize(
    ("pattern", "apt"),
    [
        ("apt_extra", ("curl", "jq")),
        ("apt_expect", ("expect", "tmux", "curl")),  # apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install
        ("no_apt", ()),  # no apt at all: the image's curl fetches uv
        ("apt_after_check", ("curl", "sqlite3", "zstd")),  # second apt line after the check
    ],
)
def test_apt_packages_are_what_the_container_gets(pattern, apt):
    assert pins_of(pattern).apt_packages == apt


def test_a_cp_setup_line_is_kept_as_argv():
    pins = pins_of("cp_setup")
    assert pins.setup_commands == (("cp", "/tests/sample_input.json", "/app/sample_input.json"),)


def test_cd_before_uvx_sets_the_working_directory_and_another_pytest_pin_is_read():
    pins = pins_of("cd_tests_pytest_8_3_4")
    assert pins.cwd == "/tests"
    assert pins.wheel("pytest") is not None and pins.wheel("pytest").version == "8.3.4"  # type: ignore[union-attr]
    assert pins.pytest_args == ("--ctrf", "/logs/verifier/ctrf.json", "test_outputs.py", "-rA")
    assert pins.checks_workdir  # the check runs before the cd


def test_extra_pytest_arguments_are_kept():
    pins = pins_of("pytest_verbose")
    assert pins.pytest_args[-2:] == ("-v", "-rA")
    assert [w.spec for w in pins.wheels][1] == "packaging==25.0"


# marker_above_shebang: two comment lines *before* '#!/bin/bash' (no shebang, so bash runs it under
# Harbor and tbflow alike)
@pytest.mark.parametrize("pattern", ["marker_after_shebang", "comments_only", "marker_above_shebang"])
def test_comment_only_variants_pin_the_standard_runner(pattern):
    assert pins_of(pattern) == pins_of(STANDARD)
