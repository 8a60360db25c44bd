"""Every cache tbflow keeps on the host lives under one root, found one way (docs/running-jobs.md, "The cache
dir"): ``$TBFLOW_CACHE_DIR``, else ``$XDG_CACHE_HOME/tbflow``, else ``~/.cache/tbflow``. Five
modules once each computed it, each honouring a different variable, so setting one moved only
some caches."""

import re
from pathlib import Path

import pytest

from harnesses.cli.cli_harness import assemble_bundle
from tasks_lib.container.build_lock import lock_dir
from tasks_lib.container.static_build import ensure_static_binary
from tasks_lib.dataset.cache import datasets_root
from tasks_lib.store.remote_store import working_root
from tasks_lib.job.trial_history import history_path

ROOT = Path(__file__).resolve().parents[1]
OVERRIDES = ("TBFLOW_CACHE_DIR", "XDG_CACHE_HOME", "TBFLOW_HISTORY", "TBFLOW_STORE_CACHE")


def cache_paths(tmp_path: Path) -> dict[str, Path]:
    source = tmp_path / "probe.c"
    source.write_text("int main(void) { return 0; }\n")
    bundle, _ = assemble_bundle("probe", "1.0.0", [], lambda tmp: (tmp / "bin").mkdir())
    return {"bundles": bundle, "static binaries": ensure_static_binary("probe", "probe", [source]),
            "build locks": lock_dir(), "datasets": datasets_root(), "history": history_path(),
            "store copies": working_root("s3://bucket/jobs")}


@pytest.mark.parametrize("env, expected", [
    ({"TBFLOW_CACHE_DIR": "own", "XDG_CACHE_HOME": "xdg"}, "own"),
    ({"XDG_CACHE_HOME": "xdg"}, "xdg/tbflow"),
    ({}, "home/.cache/tbflow"),
])
def test_every_cache_resolves_under_the_one_documented_root(tmp_path, monkeypatch, env, expected):
    for var in OVERRIDES:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    for var, rel in env.items():
        monkeypatch.setenv(var, str(tmp_path / rel))
    root = tmp_path / expected
    outside = {name: p for name, p in cache_paths(tmp_path).items() if not p.is_relative_to(root)}
    assert outside == {}, f"not under {root}"


def test_no_module_but_cache_dir_computes_the_cache_dir():
    pattern = re.compile(r"XDG_CACHE_HOME\"|TBFLOW_CACHE_DIR\"|[\"']\.cache[\"']")
    found = [f"{p.relative_to(ROOT)}:{n}" for pkg in ("flows", "tasks_lib", "harnesses")
             for p in sorted((ROOT / pkg).rglob("*.py")) if p.name != "cache_dir.py"
             for n, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]
    assert found == [], "use tasks_lib.cache_dir.cache_dir()"
