"""``tbflow run NAME@VERSION`` as a user runs it (a new process, the real CLI): the dataset is
fetched from a local git repository through a ``file://`` registry, both tasks run with the
oracle and are scored, job.json records the pins; ``tbflow resume`` then continues the job from
the cache alone (the registry is gone) and finds every trial recorded."""

import json
import os
import subprocess

import pytest

from dataset_fixtures import make_dataset_repo
from tbflow_process import ROOT, TBFLOW

pytestmark = pytest.mark.docker


def _tbflow(env, *args):
    return subprocess.run([*TBFLOW, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=900,
                          stdin=subprocess.DEVNULL)


def test_run_by_name_then_resume_offline(docker_ready, tmp_path):
    repo = make_dataset_repo(tmp_path / "src")
    env = {**os.environ, "TBFLOW_CACHE_DIR": str(tmp_path / "cache"), "TBFLOW_REGISTRY": repo.registry.as_uri()}
    jobs = tmp_path / "jobs"
    res = _tbflow(env, "run", "tiny-bench@1.0", "--jobs-dir", str(jobs), "--job-name", "j")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "dataset tiny-bench@1.0: fetched 2 task(s)" in res.stderr
    job = json.loads((jobs / "j" / "job.json").read_text())
    assert job["dataset"] == "tiny-bench@1.0"
    src = job["dataset_source"]
    assert src["commit"] == repo.c1 and src["source"] == str(repo.registry)
    assert sorted(t["name"] for t in src["tasks"]) == ["alpha", "beta"]
    assert all(t["digest"].startswith("sha256:") and t["git_url"] == repo.url for t in src["tasks"])
    for task in ("alpha", "beta"):
        record = json.loads((jobs / "j" / "trials" / f"{task}.oracle.1" / "trial.json").read_text())
        assert (record["validity"]["status"], record["validity"]["reward"]) == ("scored", 1.0), record["validity"]

    repo.registry.unlink()  # offline from here: the cache alone answers
    res = _tbflow(env, "resume", str(jobs / "j"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "all 2 trials already recorded" in res.stderr
    assert "fetched" not in res.stderr
