"""A registry dataset (name@version) is fetched once by its pinned commit into a verified cache:
versions at other commits get their own entries, a cache hit calls neither git nor the registry,
a version-less name picks head or the highest version, and concurrent runs fetch once."""

import threading

import pytest

from dataset_fixtures import dataset_repo  # noqa: F401
from tasks_lib.dataset import git_fetch
from tasks_lib.dataset.digest import task_digest
from tasks_lib.dataset.resolve import resolve_dataset
from tasks_lib.task.task_loader import load_dataset


def test_name_at_version_fetches_exactly_its_tasks_at_its_commit(dataset_repo):
    res = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    assert sorted(p.name for p in res.path.iterdir()) == ["alpha", "beta"]
    assert not (res.path / "README.md").exists() and not any(res.path.rglob(".git"))
    src = res.source
    assert (src.name, src.version, src.commit) == ("tiny-bench", "1.0", dataset_repo.c1)
    for pin in src.tasks:
        assert pin.digest == task_digest(res.path / pin.name)
    assert [t.name for t in load_dataset(res.path).tasks] == ["alpha", "beta"]
    assert any("fetched 2 task(s)" in n for n in res.notes)


def test_second_version_at_another_commit_is_cached_separately(dataset_repo):
    one = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    two = resolve_dataset("tiny-bench@2.0", str(dataset_repo.registry))
    assert one.path != two.path and one.path.is_dir()
    assert two.source.commit == dataset_repo.c2
    assert sorted(p.name for p in two.path.iterdir()) == ["alpha", "beta", "gamma"]
    beta = {v.source.version: {p.name: p.digest for p in v.source.tasks}["beta"] for v in (one, two)}
    assert beta["1.0"] != beta["2.0"]
    assert (one.path / "beta" / "tests" / "test.sh").read_text() != (two.path / "beta" / "tests" / "test.sh").read_text()


def test_cache_hit_calls_neither_git_nor_the_registry(dataset_repo, monkeypatch):
    first = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    dataset_repo.registry.unlink()  # offline: the registry is gone

    def no_git(*a, **kw):
        raise AssertionError("git was called on a cache hit")

    monkeypatch.setattr(git_fetch, "_git", no_git)
    again = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    assert again.path == first.path and again.notes == []
    assert again.source == first.source


def test_version_less_name_takes_head_else_the_highest(dataset_repo):
    assert resolve_dataset("tiny-bench", str(dataset_repo.registry)).source.version == "2.0"
    assert resolve_dataset("solo-bench", str(dataset_repo.registry)).source.version == "head"


def test_registry_comes_from_tbflow_registry_env_and_file_url(dataset_repo, monkeypatch):
    monkeypatch.setenv("TBFLOW_REGISTRY", dataset_repo.registry.as_uri())
    assert resolve_dataset("tiny-bench@1.0").source.commit == dataset_repo.c1


def test_concurrent_runs_fetch_once(dataset_repo, monkeypatch):
    calls = []
    real = git_fetch.fetch_paths
    monkeypatch.setattr("tasks_lib.dataset.fetch.fetch_paths", lambda *a, **kw: calls.append(a) or real(*a, **kw))
    results, errors = [], []

    def go():
        try:
            results.append(resolve_dataset("tiny-bench@2.0", str(dataset_repo.registry)))
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=go) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors and len(calls) == 1
    assert len({r.path for r in results}) == 1


@pytest.mark.parametrize("name", ["tiny-bench@1.0", "tiny-bench"])
def test_a_directory_of_that_name_wins(dataset_repo, tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).mkdir()
    assert resolve_dataset(name, str(dataset_repo.registry)).source is None
