"""Loading trajectory files with Harbor's own ``Trajectory`` model, through ``scripts/harbor-validate.sh``
(its Python 3.12 venv is built once in the cache). Tests skip, saying why, only when no Python 3.12
is on the machine: the check is the point of those tests."""

from __future__ import annotations

import glob
import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "harbor-validate.sh"


def _has_python312() -> bool:
    pyenv = os.environ.get("PYENV_ROOT", str(Path.home() / ".pyenv"))
    for candidate in [shutil.which("python3.12"), *glob.glob(f"{pyenv}/versions/3.12*/bin/python3.12")]:
        if candidate and subprocess.run([candidate, "-c", "import sys"], capture_output=True).returncode == 0:
            return True
    return False


def harbor_loads(*paths: Path) -> str:
    """Harbor's verdict on ``paths``: fails the test with Harbor's own error when one does not load."""
    if not _has_python312():
        pytest.skip("no Python 3.12 on this machine: Harbor (>= 3.12) cannot check the trajectories")
    proc = subprocess.run([str(SCRIPT), *map(str, paths)], capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout
