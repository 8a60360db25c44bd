"""Every synthetic test.sh fixture is listed in its README with the verdict it gets, and every
listed one exists: the README's table is the list of census patterns the tests cover."""

from __future__ import annotations

import re

from runner_pins_fixtures import FIXTURES

from tasks_lib.task.runner_pins import RunnerPins, read_runner_pins


def test_the_readme_lists_every_fixture_with_its_verdict():
    listed = dict(re.findall(r"^\| `([^`]+\.test_sh)` \| .+ \| (pinned|not pinned) \|$",
                             (FIXTURES / "README.md").read_text(), re.MULTILINE))
    files = sorted(p.name for p in FIXTURES.glob("*.test_sh"))
    assert files and sorted(listed) == files
    for name in files:
        pinned = isinstance(read_runner_pins((FIXTURES / name).read_text(encoding="utf-8")), RunnerPins)
        assert ("pinned" if pinned else "not pinned") == listed[name], name
