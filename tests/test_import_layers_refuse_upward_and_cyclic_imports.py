"""The import layers of pyproject.toml (``[tool.importlinter]``, run by scripts/check.sh) hold on
this tree, and they would catch what hides a wrong dependency: an upward import done lazily inside
a function, one under ``TYPE_CHECKING``, and a cycle between two modules of one package
(docs/architecture.md, "Package map"). Each planted violation runs on a copy of the tree."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
LINT = Path(sys.executable).with_name("lint-imports")


def _copy(tmp_path: Path) -> Path:
    for pkg in ("flows", "harnesses", "tasks_lib"):
        shutil.copytree(ROOT / pkg, tmp_path / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def _lint(tree: Path) -> subprocess.CompletedProcess:
    return subprocess.run([str(LINT), "--no-cache", "--no-logo"], cwd=tree, capture_output=True, text=True,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)}, timeout=120)


def _plant(tree: Path, module: str, code: str) -> None:
    path = tree / (module.replace(".", "/") + ".py")
    path.write_text(path.read_text(encoding="utf-8") + "\n\n" + code + "\n", encoding="utf-8")


def test_the_tree_keeps_every_contract(tmp_path):
    out = _lint(_copy(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 broken" in out.stdout


@pytest.mark.parametrize("module, code, broken", [
    ("tasks_lib.container.sandbox", "def _late():\n    from tasks_lib.trial import classify  # noqa\n",
     "tasks_lib: the container layer at the bottom"),
    ("tasks_lib.errors", "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from tasks_lib.report import stats  # noqa\n",
     "tasks_lib: the container layer at the bottom"),
    ("tasks_lib.judge.rewards", "def _late():\n    import flows.job_flow  # noqa\n", "flows -> harnesses -> tasks_lib"),
    ("flows.job.job_config", "def _late():\n    import flows.cli.main  # noqa\n", "flows: the command line"),
    ("tasks_lib.records.job_identity", "def _late():\n    from tasks_lib.records import record_models  # noqa\n",
     "no cycles between the modules of one package"),
], ids=["lazy-upward-import", "type-checking-upward-import", "package-upward-import", "core-flow-imports-cli",
        "cycle-inside-a-package"])
def test_planted_violation_breaks_its_contract(tmp_path, module, code, broken):
    tree = _copy(tmp_path)
    _plant(tree, module, code)
    out = _lint(tree)
    assert out.returncode != 0, out.stdout
    verdicts = [line for line in out.stdout.splitlines() if line.startswith(broken) and ("KEPT" in line or "BROKEN" in line)]
    assert len(verdicts) == 1 and " BROKEN" in verdicts[0], out.stdout
