"""Issue 31: a package dataset's task names must be ``org/task``; a ``dataset.toml`` with a bare
``name = "alpha"`` was refused with the path of a temp checkout in the cache (gone by the time
the error is read) and a regex. The error now names the user's file (the repository and commit,
or the store path), the field (``tasks[0].name``) and the rule in words.
"""

from __future__ import annotations

import pytest
from dataset_fixtures import dataset_repo, git  # noqa: F401
from task_factory import make_task

from tasks_lib.dataset.digest import task_digest
from tasks_lib.dataset.resolve import resolve_dataset
from tasks_lib.errors import InputError


def _toml(names_digests: list[tuple[str, str]]) -> str:
    body = "".join(f'\n[[tasks]]\nname = "{n}"\ndigest = "{d}"\n' for n, d in names_digests)
    return '[dataset]\nname = "tiny/pack"\n' + body


def test_git_package_with_a_bare_task_name_names_repo_commit_file_and_rule(dataset_repo):
    repo = dataset_repo.repo
    tasks = repo / "tasks"
    (tasks / "dataset.toml").write_text(_toml([("alpha", task_digest(tasks / "alpha"))]))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "dataset.toml with a bare name")
    sha = git(repo, "rev-parse", "HEAD")
    with pytest.raises(InputError) as caught:
        resolve_dataset(f"tiny/pack@{sha}", f"git+{dataset_repo.url}")
    err = caught.value
    assert err.where == f"{dataset_repo.url} at {sha}: tasks/dataset.toml", err.where
    assert "tasks[0].name = 'alpha'" in err.message, err.message
    assert "ORG/TASK" in err.message and "my-org/hello-world" in err.message
    assert "[A-Za-z0-9]" not in err.message and "pattern" not in err.message
    assert "toml-" not in err.where and "cache" not in err.where


def test_store_package_with_a_bad_digest_names_the_store_file_and_rule(dataset_repo, tmp_path):
    here = tmp_path / "store" / "datasets" / "tiny" / "pack" / "1.0"
    one = make_task(here, "one")
    (here / "dataset.toml").write_text(_toml([("tiny/one", task_digest(one)), ("tiny/two", "sha256:ABC")]))
    with pytest.raises(InputError) as caught:
        resolve_dataset("tiny/pack@1.0", str(tmp_path / "store"))
    assert caught.value.where == str(here / "dataset.toml")
    assert caught.value.message.startswith("tasks[1].digest = 'sha256:ABC': a digest is \"sha256:\" and 64"), \
        caught.value.message
