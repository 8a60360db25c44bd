"""A package dataset (org/name@ref) is a dataset.toml listing tasks by sha256 digest, from a store
directory or a git repository; every task is checked against its digest, and one that differs
is refused, never run."""

import pytest

from dataset_fixtures import dataset_repo, git  # noqa: F401
from task_factory import make_task
from tasks_lib.dataset.digest import task_digest
from tasks_lib.dataset.resolve import resolve_dataset
from tasks_lib.errors import InputError


def _toml(tasks: dict[str, str]) -> str:
    body = "".join(f'\n[[tasks]]\nname = "tiny/{n}"\ndigest = "{d}"\n' for n, d in tasks.items())
    return '# a dataset.toml fixture\n[dataset]\nname = "tiny/pack"\ndescription = "two tasks"\n' + body


def _store(tmp_path):
    store = tmp_path / "store"
    here = store / "datasets" / "tiny" / "pack" / "1.0"
    one = make_task(here, "one")
    # the second task lives in the digest-named layout of Harbor's package cache
    staging = make_task(tmp_path / "staging", "two", instruction="Two.\n")
    digest = task_digest(staging)
    dest = store / "tasks" / "tiny" / "two" / digest.removeprefix("sha256:")
    dest.parent.mkdir(parents=True)
    staging.rename(dest)
    (here / "dataset.toml").write_text(_toml({"one": task_digest(one), "two": digest}))
    return store, here


def test_store_package_resolves_and_records_digests(dataset_repo, tmp_path):
    store, _here = _store(tmp_path)
    res = resolve_dataset("tiny/pack@1.0", str(store))
    assert sorted(p.name for p in res.path.iterdir()) == ["one", "two"]
    assert res.source.kind == "package" and res.source.name == "tiny/pack"
    assert {p.name: p.digest for p in res.source.tasks} == {
        "one": task_digest(res.path / "one"), "two": task_digest(res.path / "two")}


def test_a_task_that_differs_from_its_digest_is_refused(dataset_repo, tmp_path):
    store, here = _store(tmp_path)
    (here / "one" / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    with pytest.raises(InputError, match="task one .* has digest sha256:.*but sha256:.* is pinned"):
        resolve_dataset("tiny/pack@1.0", str(store))


def test_unknown_package_lists_what_the_store_has(dataset_repo, tmp_path):
    store, _here = _store(tmp_path)
    with pytest.raises(InputError, match="it has: tiny/pack@1.0"):
        resolve_dataset("tiny/other@1.0", str(store))


def test_package_from_a_git_repository_at_a_full_sha(dataset_repo, tmp_path):
    repo = dataset_repo.repo
    tasks = repo / "tasks"
    (tasks / "dataset.toml").write_text(_toml({"alpha": task_digest(tasks / "alpha"), "gamma": task_digest(tasks / "gamma")}))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "dataset.toml")
    sha = git(repo, "rev-parse", "HEAD")
    with pytest.raises(InputError, match="not a full commit SHA"):
        resolve_dataset("tiny/pack@main", f"git+{dataset_repo.url}")
    res = resolve_dataset(f"tiny/pack@{sha}", f"git+{dataset_repo.url}")
    assert sorted(p.name for p in res.path.iterdir()) == ["alpha", "gamma"]
    assert res.source.commit == sha and res.source.source == dataset_repo.url
