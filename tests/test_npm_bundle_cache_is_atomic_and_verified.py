"""npm packages are fetched once, checked against their integrity by tbflow, and cached atomically.

Uses a small real package (``is-number@7.0.0``, 4 files) through the real npm client, so the
download, ``npm pack --json`` output and the registry's SRI are the genuine article. Each test
gets its own cache (``TBFLOW_CACHE_DIR``).
"""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
import threading
from pathlib import Path

import pytest

from concurrently import call_concurrently
from harnesses.bundles import npm_bundle
from harnesses.bundles.bundle_cache import build_atomically, read_valid
from harnesses.bundles.npm_bundle import (IntegrityMismatchError, NpmCommandError, NpmPackage, NpmUnavailableError,
                                  UnsafePackageError, fetch_package, provenance, verify_tarball)

IS_NUMBER = NpmPackage("is-number", "7.0.0")
IS_NUMBER_SRI = "sha512-41Cifkg6e8TylSpdtTpeLVMqvSBEVzTttHvERD741+pnZ8ANv0004MRL43QKPDlK9cGvNp6NZWZUBlbGXYxxng=="
OTHER_SRI = "sha512-" + base64.b64encode(hashlib.sha512(b"not is-number").digest()).decode()


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "cache"
    monkeypatch.setenv("TBFLOW_CACHE_DIR", str(root))
    return root


def version_dir(cache: Path) -> Path:
    return cache / "npm" / "is-number" / "7.0.0"


def test_fetch_verifies_unpacks_and_records_provenance(cache):
    pkg_dir = fetch_package(IS_NUMBER)
    assert json.loads((pkg_dir / "package.json").read_text())["version"] == "7.0.0"
    assert "module.exports" in (pkg_dir / "index.js").read_text()
    assert pkg_dir.parent.parent == version_dir(cache)
    assert pkg_dir.parent.name == base64.b64decode(IS_NUMBER_SRI[len("sha512-"):]).hex()[:16]
    manifest = json.loads((pkg_dir.parent / "manifest.json").read_text())
    assert manifest["integrity"] == IS_NUMBER_SRI and manifest["tarball"] == "is-number-7.0.0.tgz"
    assert manifest["files"]["package/index.js"] == (pkg_dir / "index.js").stat().st_size
    assert not list(pkg_dir.parent.glob("download"))  # the tarball is not kept
    assert pkg_dir.parent.stat().st_mode & 0o777 == 0o755  # readable by a non-root agent user
    prov = provenance(pkg_dir)
    assert (prov.name, prov.version, prov.integrity, prov.source, prov.files) == (
        "is-number", "7.0.0", IS_NUMBER_SRI, "npm", 4)


def test_second_fetch_is_a_cache_hit_without_npm(cache, monkeypatch, tmp_path):
    first = fetch_package(IS_NUMBER)
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # npm is gone: any npm call would raise
    with pytest.raises(NpmUnavailableError, match="npm is not on PATH"):
        npm_bundle.run_npm(["--version"], tmp_path, "probe")
    assert fetch_package(IS_NUMBER) == first
    assert fetch_package(NpmPackage("is-number", "7.0.0", integrity=IS_NUMBER_SRI)) == first


def test_registry_disagreeing_with_the_pin_is_refused_and_nothing_cached(cache):
    with pytest.raises(IntegrityMismatchError, match="the harness pins"):
        fetch_package(NpmPackage("is-number", "7.0.0", integrity=OTHER_SRI))
    assert not version_dir(cache).exists() or not any(version_dir(cache).iterdir())


def test_tarball_not_matching_the_integrity_is_refused(cache, monkeypatch):
    """A download whose sha512 differs from the expected SRI never reaches the cache."""
    monkeypatch.setattr(npm_bundle, "registry_integrity", lambda pkg, cwd: OTHER_SRI)
    with pytest.raises(IntegrityMismatchError, match="does not match integrity"):
        fetch_package(IS_NUMBER)
    assert list(version_dir(cache).iterdir()) == []  # no entry, no leftover .tmp-* dir


def test_verify_tarball_detects_a_flipped_byte(tmp_path):
    good = tmp_path / "t.tgz"
    good.write_bytes(b"\x1f\x8b" + b"payload" * 100)
    sri = "sha512-" + base64.b64encode(hashlib.sha512(good.read_bytes()).digest()).decode()
    verify_tarball(good, sri, "t")
    data = bytearray(good.read_bytes())
    data[50] ^= 1
    good.write_bytes(bytes(data))
    with pytest.raises(IntegrityMismatchError):
        verify_tarball(good, sri, "t")


def test_corrupted_cache_entry_is_not_served(cache, monkeypatch, tmp_path):
    pkg_dir = fetch_package(IS_NUMBER)
    (pkg_dir / "index.js").write_text("module.exports = () => true; // tampered\n" * 3)
    bin_dir = tmp_path / "nobin"
    bin_dir.mkdir()
    saved_path = __import__("os").environ["PATH"]
    monkeypatch.setenv("PATH", str(bin_dir))
    with pytest.raises(NpmUnavailableError):
        fetch_package(IS_NUMBER)  # the broken entry is no hit; without npm there is nothing to serve
    monkeypatch.setenv("PATH", saved_path)
    again = fetch_package(IS_NUMBER)  # with npm: refetched and verified
    assert "tampered" not in (again / "index.js").read_text()
    assert [p.name for p in version_dir(cache).iterdir()] == [pkg_dir.parent.name]


def test_unknown_version_fails_clearly_with_npms_stderr(cache):
    with pytest.raises(NpmCommandError) as err:
        fetch_package(NpmPackage("is-number", "99.99.99"))
    assert "E404" in str(err.value) and "is-number@99.99.99" in str(err.value)
    assert "99.99.99" in err.value.stderr


def test_concurrent_fetches_end_with_one_valid_entry(cache):
    results, errors = call_concurrently(lambda: fetch_package(IS_NUMBER), 3)
    assert errors == [] and len(set(results)) == 1
    entries = list(version_dir(cache).iterdir())
    assert [e.name for e in entries] == [results[0].parent.name]  # no .tmp-* or .discard-* left
    assert read_valid(entries[0], {"integrity": IS_NUMBER_SRI}) is not None


def test_racing_builders_one_wins_the_loser_discards(tmp_path):
    """Both builds run to completion at the same moment; exactly one rename publishes."""
    final = tmp_path / "entry"
    barrier = threading.Barrier(2)
    built, manifests = [], []

    def build(tmp: Path) -> dict:
        (tmp / "data.txt").write_text(f"from {threading.current_thread().name}\n")
        barrier.wait(timeout=10)  # both temp dirs exist before either renames
        built.append(tmp)
        return {}

    threads = [threading.Thread(target=lambda: manifests.append(build_atomically(final, {"k": 1}, build)), name=f"b{i}")
               for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(built) == 2 and len(manifests) == 2
    assert manifests[0] == manifests[1] == json.loads((final / "manifest.json").read_text())
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry"]  # the loser's temp dir is gone
    assert (final / "data.txt").read_text() in ("from b0\n", "from b1\n")


def _tarball(members: list[tuple[str, bytes]]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members:
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


@pytest.mark.parametrize("members, why", [
    ([("package/index.js", b"x"), ("package/../../evil.js", b"x")], "escapes"),
    ([("package/index.js", b"x"), ("/etc/evil", b"x")], "absolute"),
    ([("package/index.js", b"x"), ("other/index.js", b"x")], "outside package/"),
])
def test_unsafe_tarball_is_refused_even_with_a_matching_hash(cache, monkeypatch, members, why):
    data = _tarball(members)
    sri = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()

    def fake_npm(args, cwd, what, timeout=0):
        if args[0] == "view":
            return json.dumps(sri)
        (cwd / "evil-1.0.0.tgz").write_bytes(data)
        return json.dumps([{"filename": "evil-1.0.0.tgz"}])

    monkeypatch.setattr(npm_bundle, "run_npm", fake_npm)
    with pytest.raises(UnsafePackageError, match=why):
        fetch_package(NpmPackage("evil", "1.0.0"))
    assert not (cache.parent / "evil.js").exists()
    assert list((cache / "npm" / "evil" / "1.0.0").iterdir()) == []
