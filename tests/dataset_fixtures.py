"""A dataset as a user's machine would see it, without network: a local git repository holding a
few tiny TB 2.x tasks over two commits, and a registry file in Harbor's format pointing at it by
``file://`` URL with full commit SHAs.

Commit 1 has ``alpha`` and ``beta``; commit 2 changes ``beta``'s ``tests/test.sh`` and adds
``gamma``. The registry offers ``tiny-bench`` 1.0 (commit 1), 2.0 (commit 2) and ``solo-bench``
head (commit 2, ``alpha`` only).
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from task_factory import make_task

GIT = ["git", "-c", "user.name=tbflow-test", "-c", "user.email=test@tbflow.invalid", "-c", "init.defaultBranch=main"]


def git(repo: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout.strip()


@dataclass
class DatasetRepo:
    repo: Path
    url: str
    c1: str
    c2: str
    registry: Path

    def write_registry(self, datasets: list[dict]) -> None:
        self.registry.write_text(json.dumps(datasets, indent=2) + "\n")


def entry(name: str, version: str, url: str, commit: str, tasks: list[str]) -> dict:
    """One dataset of a registry file, tasks under ``tasks/`` of the repository."""
    return {"name": name, "version": version, "description": f"{name} for tests",
            "tasks": [{"name": t, "git_url": url, "git_commit_id": commit, "path": f"tasks/{t}"} for t in tasks]}


def make_dataset_repo(root: Path) -> DatasetRepo:
    repo = root / "tb-repo"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    make_task(repo / "tasks", "alpha")
    make_task(repo / "tasks", "beta", check="test -d /app")
    (repo / "README.md").write_text("not a task\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two tasks")
    c1 = git(repo, "rev-parse", "HEAD")
    (repo / "tasks" / "beta" / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    make_task(repo / "tasks", "gamma")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "beta's verifier changed, gamma added")
    c2 = git(repo, "rev-parse", "HEAD")
    url = repo.as_uri()
    found = DatasetRepo(repo=repo, url=url, c1=c1, c2=c2, registry=root / "registry.json")
    found.write_registry([entry("tiny-bench", "1.0", url, c1, ["alpha", "beta"]),
                          entry("tiny-bench", "2.0", url, c2, ["alpha", "beta", "gamma"]),
                          entry("solo-bench", "head", url, c2, ["alpha"])])
    return found


@pytest.fixture
def dataset_repo(tmp_path, monkeypatch) -> DatasetRepo:
    """The repository and registry, with the dataset cache in ``tmp_path`` and no default registry."""
    monkeypatch.setenv("TBFLOW_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("TBFLOW_REGISTRY", raising=False)
    return make_dataset_repo(tmp_path / "src")
