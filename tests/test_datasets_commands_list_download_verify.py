"""``tbflow datasets list`` shows the registry's datasets and what is cached (with sizes);
``download --to DIR`` exports a dataset that runs offline and is still verified (and recorded by
name); ``verify`` recomputes the digests and exits 1 naming the file that changed."""

from typer.testing import CliRunner

import pytest

from dataset_fixtures import dataset_repo  # noqa: F401
from flows.cli.datasets_cli import register
from flows.cli.main import app
from tasks_lib.dataset.exports import EXPORT_MANIFEST
from tasks_lib.dataset.resolve import resolve_dataset
from tasks_lib.errors import InputError

register(app)


def _cli(*args):
    return CliRunner().invoke(app, list(args))


def test_list_shows_registry_versions_and_cached_sizes(dataset_repo):
    res = _cli("datasets", "list", "--registry", str(dataset_repo.registry))
    assert res.exit_code == 0, res.output
    assert "tiny-bench  1.0 (2 tasks), 2.0 (3 tasks)" in res.output and "solo-bench  head (1 tasks)" in res.output
    assert "nothing" in res.output
    resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    res = _cli("datasets", "list", "--cached")
    assert res.exit_code == 0 and res.output.startswith("cached in ")
    assert "tiny-bench@1.0  2 tasks  " in res.output and "KiB" in res.output and dataset_repo.c1[:12] in res.output


def test_list_offline_still_shows_the_cache_then_exits_2_naming_the_registry(dataset_repo, tmp_path):
    resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry))
    missing = tmp_path / "gone" / "registry.json"
    res = _cli("datasets", "list", "--registry", str(missing))
    assert res.exit_code == 2, res.output
    assert "tiny-bench@1.0  2 tasks  " in res.output  # what runs offline is listed
    last = res.output.strip().splitlines()[-1]
    assert last.startswith("tbflow: error: --registry: ") and str(missing) in last


def test_download_exports_a_directory_that_runs_offline_and_is_verified(dataset_repo, tmp_path):
    out = tmp_path / "export"
    res = _cli("datasets", "download", "tiny-bench@2.0", "--to", str(out), "--registry", str(dataset_repo.registry))
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.iterdir()) == ["alpha", "beta", "gamma", EXPORT_MANIFEST]
    src = resolve_dataset(str(out)).source  # a plain directory now, no registry needed
    assert src is not None and src.pinned_spec == "tiny-bench@2.0" and src.commit == dataset_repo.c2
    (out / "gamma" / "instruction.md").write_text("changed\n")
    with pytest.raises(InputError, match="task gamma: changed: instruction.md"):
        resolve_dataset(str(out))
    res = _cli("datasets", "download", "tiny-bench@2.0", "--to", str(out), "--registry", str(dataset_repo.registry))
    assert res.exit_code == 2 and "not an empty directory" in res.output


def test_verify_exits_1_naming_the_changed_file(dataset_repo):
    for version in ("1.0", "2.0"):
        resolve_dataset(f"tiny-bench@{version}", str(dataset_repo.registry))
    res = _cli("datasets", "verify")
    assert res.exit_code == 0 and res.output.count("ok tiny-bench@") == 2, res.output
    one = resolve_dataset("tiny-bench@1.0", str(dataset_repo.registry)).path
    (one / "alpha" / "environment" / "Dockerfile").write_text("FROM evil\n")
    res = _cli("datasets", "verify", "tiny-bench")
    assert res.exit_code == 1, res.output
    assert "CHANGED tiny-bench@1.0" in res.output and "task alpha: changed: environment/Dockerfile" in res.output
    assert "ok tiny-bench@2.0" in res.output
    res = _cli("datasets", "verify", "nope")
    assert res.exit_code == 2 and "cached: tiny-bench@1.0, tiny-bench@2.0" in res.output
