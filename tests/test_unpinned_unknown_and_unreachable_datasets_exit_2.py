"""Bad dataset input is one line and exit 2, touching nothing cached: a commit that is not a full
SHA (unless --allow-unpinned, which records the SHA), an unknown name or version (listing what
the registry has), an unreachable registry or git URL (named)."""

from typer.testing import CliRunner

import pytest

from dataset_fixtures import dataset_repo, entry  # noqa: F401
from flows.cli.datasets_cli import register
from flows.cli.main import app
from tasks_lib.dataset import cache
from tasks_lib.dataset.resolve import resolve_dataset
from tasks_lib.errors import InputError

register(app)


def _refused(*args):
    res = CliRunner().invoke(app, list(args))
    assert res.exit_code == 2, res.output
    lines = [ln for ln in res.output.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("tbflow: error: "), res.output
    return lines[0]


def test_non_full_sha_is_refused_unless_allowed(dataset_repo):
    dataset_repo.write_registry([entry("moving", "1.0", dataset_repo.url, "main", ["alpha"]),
                                 entry("short", "1.0", dataset_repo.url, dataset_repo.c1[:12], ["alpha"])])
    for name in ("moving@1.0", "short@1.0"):
        with pytest.raises(InputError, match="not a full commit SHA.*--allow-unpinned"):
            resolve_dataset(name, str(dataset_repo.registry))
    assert not (cache.datasets_root() / "registry").exists()
    res = resolve_dataset("moving@1.0", str(dataset_repo.registry), allow_unpinned=True)
    assert res.source.commit == dataset_repo.c2 and res.source.tasks[0].commit == dataset_repo.c2


def test_unknown_name_or_version_exits_2_listing_what_exists(dataset_repo, tmp_path):
    jobs = tmp_path / "jobs"
    line = _refused("run", "huge-bench@1.0", "--registry", str(dataset_repo.registry), "--jobs-dir", str(jobs))
    assert "huge-bench" in line and "solo-bench (head); tiny-bench (1.0, 2.0)" in line
    line = _refused("run", "tiny-bench@9.9", "--registry", str(dataset_repo.registry), "--jobs-dir", str(jobs))
    assert "no version '9.9'" in line and "versions: 1.0, 2.0" in line
    assert not jobs.exists()


def test_unreachable_registry_is_one_line_naming_it(dataset_repo, tmp_path):
    missing = tmp_path / "nowhere" / "registry.json"
    line = _refused("run", "tiny-bench@1.0", "--registry", str(missing), "--jobs-dir", str(tmp_path / "jobs"))
    assert str(missing) in line and "cannot read the registry" in line
    line = _refused("run", "tiny-bench@1.0", "--registry", "http://127.0.0.1:9/registry.json",
                    "--jobs-dir", str(tmp_path / "jobs"))
    assert "http://127.0.0.1:9/registry.json" in line


def test_unreachable_git_url_is_one_line_and_leaves_the_cache_alone(dataset_repo, tmp_path):
    kept = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry)).path
    gone = (tmp_path / "no-such-repo").as_uri()
    dataset_repo.write_registry([entry("tiny-bench", "1.0", dataset_repo.url, dataset_repo.c1, ["alpha", "beta"]),
                                 entry("lost", "1.0", gone, dataset_repo.c1, ["alpha"])])
    line = _refused("run", "lost@1.0", "--registry", str(dataset_repo.registry), "--jobs-dir", str(tmp_path / "jobs"))
    assert gone in line and "cannot fetch" in line
    assert sorted(p.name for p in (cache.datasets_root() / "registry").iterdir()) == [kept.parent.name]
    assert not list((cache.datasets_root() / ".tmp").iterdir())
    line = _refused("datasets", "download", "lost@1.0", "--to", str(tmp_path / "out"),
                    "--registry", str(dataset_repo.registry))
    assert gone in line and not (tmp_path / "out").exists()


def test_mistyped_directory_says_no_such_directory_and_why_it_is_no_name_either(tmp_path, monkeypatch):
    """``tbflow run my-taks`` (a typo, no such directory) reads as a registry name too; offline the
    registry cannot be read, and the one line must still say first that there is no such directory."""
    monkeypatch.chdir(tmp_path)
    missing = tmp_path / "no-registry.json"
    line = _refused("run", "my-taks", "--registry", str(missing), "--jobs-dir", str(tmp_path / "jobs"))
    assert "DATASET: my-taks: no such directory, and as a dataset name:" in line and str(missing) in line
    assert not (tmp_path / "jobs").exists()
