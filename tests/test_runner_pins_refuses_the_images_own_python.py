"""test.sh patterns whose runner comes from the container (pip into the image's Python, the image's
pytest, ``uv venv`` in the container, or uvx from the image's uv) are NotPinned with a reason the
census counts: tbflow must fall back to the container's runner for them. Each is a synthetic
fixture of tests/fixtures/test_sh/ named after its pattern."""

from __future__ import annotations

import pytest
from runner_pins_fixtures import fixture_test_sh

from tasks_lib.task.runner_pins import NotPinned, read_runner_pins


@pytest.mark.parametrize(
    ("pattern", "line", "reason"),
    [
        ("pip_pytest", 4, "'pip' runs the image's own Python/pytest"),
        ("pip_pytest_after_check", 14, "'pip' runs the image's own Python/pytest"),
        ("image_python", 10, "'pip' runs the image's own Python/pytest"),
        ("uv_venv", 18, "'uv venv/pip/run' builds the runner inside the container"),
        ("uvx_no_installer", 10, "installs no pinned uv"),
    ],
)
def test_a_runner_from_the_container_is_not_pinned(pattern, line, reason):
    verdict = read_runner_pins(fixture_test_sh(pattern))
    assert isinstance(verdict, NotPinned)
    assert verdict.line == line and reason in verdict.reason


@pytest.mark.parametrize(("pattern", "command"), [("pip_pytest", "pytest --ctrf"), ("image_python", "python -m pytest")])
def test_the_image_pytest_is_refused_even_after_a_pinned_looking_pip_install(pattern, command):
    text = fixture_test_sh(pattern).replace("pip install", "# pip install", 1)
    verdict = read_runner_pins(text)
    assert isinstance(verdict, NotPinned) and verdict.text.startswith(command)
    assert "runs the image's own Python/pytest" in verdict.reason
