"""requirements.lock (what scripts/setup.sh installs, hash-checked) pins every dependency that
pyproject.toml declares, so two installs a week apart cannot differ. Regenerate it with the
command in its first lines after changing a dependency."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def test_every_declared_dependency_is_pinned_with_hashes():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = {_name(r) for r in project["dependencies"]}
    declared |= {_name(r) for group in project["optional-dependencies"].values() for r in group}
    lock = (ROOT / "requirements.lock").read_text()
    pinned = dict(re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+) \\$", lock, flags=re.M))
    pinned = {k.lower().replace("_", "-"): v for k, v in pinned.items()}
    assert declared <= set(pinned), f"not in requirements.lock: {sorted(declared - set(pinned))}"
    blocks = re.split(r"\n(?=\S)", lock)
    unhashed = [b.split("==")[0] for b in blocks if "==" in b and "--hash=sha256:" not in b]
    assert not unhashed, f"pinned without a hash: {unhashed}"
