"""The standard TB 2.x test.sh shape (28 of the 83 TB 2.1 files read, bench/RESULTS.md; here the
synthetic standard.test_sh) pins uv 0.9.5, CPython 3.13, pytest 8.4.1 and pytest-json-ctrf 0.3.5, and
writes 1/0 to reward.txt from pytest's exit status."""

from __future__ import annotations

from runner_pins_fixtures import STANDARD, fixture_test_sh

from tasks_lib.task.runner_pins import RewardRule, RunnerPins, WheelPin, read_runner_pins


def test_the_standard_file_pins_exactly_its_runner():
    pins = read_runner_pins(fixture_test_sh(STANDARD))
    assert pins == RunnerPins(
        python="3.13",
        uv="0.9.5",
        wheels=(WheelPin(name="pytest", version="8.4.1"), WheelPin(name="pytest-json-ctrf", version="0.3.5")),
        pytest_args=("--ctrf", "/logs/verifier/ctrf.json", "/tests/test_outputs.py", "-rA"),
        apt_packages=("curl",),
        setup_commands=(),
        cwd=None,
        checks_workdir=True,
        reward=RewardRule(path="/logs/verifier/reward.txt", on_pass="1", on_fail="0"),
    )


def test_wheel_lookup_uses_the_normalised_name():
    pins = read_runner_pins(fixture_test_sh(STANDARD))
    assert isinstance(pins, RunnerPins)
    found = pins.wheel("Pytest_JSON.ctrf")
    assert found is not None and found.spec == "pytest-json-ctrf==0.3.5"
    assert pins.wheel("numpy") is None


def test_pins_are_immutable():
    pins = read_runner_pins(fixture_test_sh(STANDARD))
    assert isinstance(pins, RunnerPins)
    try:
        pins.python = "3.12"  # type: ignore[misc]
    except Exception:  # pydantic's frozen-instance error
        return
    raise AssertionError("RunnerPins must be frozen")
