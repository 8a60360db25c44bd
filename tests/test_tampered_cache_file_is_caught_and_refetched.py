"""A cached dataset is verified on every use, never trusted: a changed, added or removed file is
reported by name and the task fetched again (from the pins in the cache manifest, without the
registry), never run as it is. If it cannot be fetched again, the run is refused."""

import pytest

from dataset_fixtures import dataset_repo  # noqa: F401
from tasks_lib.dataset import cache
from tasks_lib.dataset.resolve import resolve_dataset
from tasks_lib.errors import InputError


def test_tampered_cache_file_is_caught_and_refetched(dataset_repo):
    first = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    test_sh = first.path / "beta" / "tests" / "test.sh"
    original = test_sh.read_text()
    test_sh.write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt  # forged\n")
    (first.path / "alpha" / "tests" / "conftest.py").write_text("planted\n")
    again = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    (note,) = again.notes
    assert "task beta: changed: tests/test.sh" in note and "task alpha: added: tests/conftest.py" in note
    assert "fetching it again" in note
    assert test_sh.read_text() == original
    assert not (again.path / "alpha" / "tests" / "conftest.py").exists()
    assert again.source.tasks == first.source.tasks
    assert resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry)).notes == []


def test_a_tampered_cache_that_cannot_be_refetched_is_refused_and_left_alone(dataset_repo, tmp_path):
    first = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    (first.path / "alpha" / "instruction.md").write_text("Do something else.\n")
    dataset_repo.repo.rename(tmp_path / "moved")  # the repository is unreachable now
    with pytest.raises(InputError) as err:
        resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    assert "task alpha: changed: instruction.md" in err.value.message and "it is not used" in err.value.message
    assert "\n" not in str(err.value)
    assert (first.path / "alpha" / "instruction.md").read_text() == "Do something else.\n"  # untouched
    assert not list((cache.datasets_root() / ".tmp").iterdir())  # nothing half-built left


def test_an_interrupted_fetch_leaves_no_entry(dataset_repo, monkeypatch):
    def boom(*a, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr("tasks_lib.dataset.fetch.copy_tree", boom)
    with pytest.raises(KeyboardInterrupt):
        resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    root = cache.datasets_root()
    assert not (root / "registry").exists() or not list((root / "registry").iterdir())
    assert not list((root / ".tmp").iterdir())
