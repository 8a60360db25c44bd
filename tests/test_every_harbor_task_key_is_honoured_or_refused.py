"""Every key of Harbor's own task schema has a row in tbflow's key table (honoured or refused by
name), and every row is a key of that schema or a legacy alias Harbor maps: a Harbor release with
a new key fails here before a user's task is run as something else. The schema comes from the
pinned Harbor package (scripts/harbor-task-keys.sh walks its pydantic models)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tasks_lib.task.key_rules import LEGACY_ALIASES, RULES, rule_for

ROOT = Path(__file__).resolve().parents[1]
NO_PYTHON312 = 3


@pytest.fixture(scope="module")
def harbor_keys() -> list[str]:
    done = subprocess.run([str(ROOT / "scripts" / "harbor-task-keys.sh")], capture_output=True, text=True,
                          timeout=1200)
    if done.returncode == NO_PYTHON312:
        pytest.skip(f"no Python 3.12 for Harbor 0.26: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr[-3000:]
    keys = json.loads(done.stdout)
    assert "verifier.environment_mode" in keys and "steps[].name" in keys  # the walk reached nested tables
    return keys


def test_every_harbor_key_has_a_row(harbor_keys):
    uncovered = [k for k in harbor_keys if rule_for(k) is None]
    assert not uncovered, f"keys of Harbor's task schema with no row in key_rules.RULES: {uncovered}"


def test_every_row_is_a_harbor_key_or_a_legacy_alias(harbor_keys):
    stray = sorted(set(RULES) - set(harbor_keys) - LEGACY_ALIASES)
    assert not stray, f"rows of key_rules.RULES that Harbor's schema does not have: {stray}"
