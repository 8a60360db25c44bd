"""The pure parts of the supplied runner's build, without Docker or network: the hardening
refuses a build it does not know, keeps every patched string's length and lands it under /sys;
the manifest depends on content only; the cache key moves with every input; a request tbflow
cannot supply is refused by a typed error before anything is downloaded."""

import hashlib
import os
from pathlib import Path

import pytest

from tasks_lib.container.supplied_runner import debs, harden, prepare
from tasks_lib.container.supplied_runner.manifest import manifest_text, verify, write_manifest
from tasks_lib.errors import RunnerUnavailable

ALL_PATCHED = [s for strings in harden.PATCHES.values() for s in strings]


@pytest.mark.parametrize("path", ALL_PATCHED)
def test_inert_paths_keep_the_length_and_point_under_read_only_sys(path):
    new = harden.inert(path)
    assert len(new) == len(path)
    assert new.startswith("/sys/") and new.endswith("/") == path.endswith("/")
    # "/lib/" can only become "/sys/" itself: a search dir no file can be created in
    assert new == "/sys/" or not os.path.exists(new)


def fake_library(strings, extra=b""):
    """Bytes laid out as in a real build: NUL-separated strings, one copy after a non-NUL byte."""
    return b"\x7fELF\0" + b"\0".join(s.encode() for s in strings) + b"\0" + extra


def test_patch_replaces_whole_strings_only_and_keeps_the_size():
    strings = harden.PATCHES[harden.LOADER]
    data = fake_library(strings, extra=b"\x05/lib/x86_64-linux-gnu/\0/etc/ld.so.preloadX\0")
    out, changed = harden.patch_bytes(data, strings, harden.LOADER)
    assert len(out) == len(data)
    assert changed == len(strings) + 1  # the copy after a non-NUL, non-printable byte too
    for s in strings:
        assert f"\0{s}\0".encode() not in out
    assert b"/etc/ld.so.preloadX\0" in out  # a longer string is not ours to touch


def test_patch_refuses_a_build_whose_string_is_missing():
    strings = harden.PATCHES["libc.so.6"]
    data = fake_library(strings[1:])  # no /etc/nsswitch.conf: an unknown build
    with pytest.raises(RunnerUnavailable, match="nsswitch.conf.*refusing"):
        harden.patch_bytes(data, strings, "libc.so.6")


def test_patch_refuses_a_string_embedded_in_a_longer_path():
    data = b"\0/opt/etc/nsswitch.conf\0"
    with pytest.raises(RunnerUnavailable):
        harden.patch_bytes(data, ("/etc/nsswitch.conf",), "libc.so.6")


def make_tree(root: Path) -> None:
    (root / "bin").mkdir(parents=True)
    (root / "bin/python3.13").write_bytes(b"\x7fELF")
    (root / "bin/python3.13").chmod(0o555)
    (root / "lib").mkdir()
    (root / "lib/a.py").write_text("x = 1\n")
    (root / "lib/link").symlink_to("a.py")


def test_manifest_depends_on_content_only(tmp_path):
    make_tree(tmp_path / "one")
    make_tree(tmp_path / "two")
    os.utime(tmp_path / "two/lib/a.py", (12345, 12345))
    first = write_manifest(tmp_path / "one")
    assert write_manifest(tmp_path / "two") == first
    assert verify(tmp_path / "one") == first == hashlib.sha256((tmp_path / "one/MANIFEST.sha256").read_bytes()).hexdigest()
    text = manifest_text(tmp_path / "one")
    assert "exec\t" in text and "link\ta.py\tlib/link" in text and "MANIFEST" not in text


def test_manifest_verify_catches_a_changed_file(tmp_path):
    make_tree(tmp_path)
    write_manifest(tmp_path)
    (tmp_path / "lib/a.py").write_text("x = 2\n")
    with pytest.raises(RunnerUnavailable, match="no longer match"):
        verify(tmp_path)


def test_cache_key_changes_with_every_input(monkeypatch):
    base = prepare.cache_key("3.13", ["pytest==8.4.1"])
    assert prepare.cache_key("3.13", ["pytest==8.4.1"]) == base
    assert prepare.cache_key("3.13.5", ["pytest==8.4.1"]) != base
    assert prepare.cache_key("3.13", ["pytest==8.4.2"]) != base
    assert prepare.cache_key("3.13", ["pytest==8.4.1", "requests"]) != base
    assert prepare.cache_key("3.13", ["pytest==8.4.1"], mount_at="/opt/other") != base
    pinned = debs.DEBS[0]
    monkeypatch.setattr(debs, "DEBS", (pinned._replace(sha256="0" * 64), *debs.DEBS[1:]))
    assert prepare.cache_key("3.13", ["pytest==8.4.1"]) != base


def test_cache_key_covers_the_build_code():
    sources = {p.name for p in Path(prepare.__file__).parent.glob("*.py")}
    assert {"debs.py", "wheels.py", "harden.py", "assemble.py", "manifest.py", "prepare.py"} <= sources


@pytest.mark.parametrize("python", ["3.12", "3.14", "3.13.4", "3"])
def test_another_python_is_refused_before_any_download(python, monkeypatch, tmp_path):
    monkeypatch.setenv("TBFLOW_CACHE_DIR", str(tmp_path))
    with pytest.raises(RunnerUnavailable, match=f"Python {python} was asked for"):
        prepare.prepare_runner(python, ["pytest==8.4.1"])
    assert not any(tmp_path.iterdir())


def test_another_architecture_is_refused(monkeypatch):
    monkeypatch.setattr(prepare.platform, "machine", lambda: "aarch64")
    with pytest.raises(RunnerUnavailable, match="amd64 only"):
        prepare.check_request("3.13", [])


@pytest.mark.parametrize("spec", ["--index-url=http://evil", "", "pytest\n-e ."])
def test_an_option_smuggled_as_a_spec_is_refused(spec):
    with pytest.raises(RunnerUnavailable, match="not a requirement"):
        prepare.check_request("3.13", [spec])


def test_pins_name_their_pool_files():
    for deb in debs.DEBS:
        assert len(deb.sha256) == 64 and deb.pool_path.startswith("pool/main/")
        assert deb.pool_path.endswith(f"/{deb.name}_{deb.version.split(':')[-1]}_amd64.deb")
    assert "pool/main/libz/libzstd/libzstd1_1.5.7+dfsg-1_amd64.deb" in {d.pool_path for d in debs.DEBS}


def test_an_unreachable_mirror_is_a_typed_refusal(monkeypatch, tmp_path):
    monkeypatch.setenv("TBFLOW_DEBIAN_MIRROR", "http://127.0.0.1:9/debian")
    with pytest.raises(RunnerUnavailable, match="cannot download http://127.0.0.1:9/debian/pool/"):
        debs.fetch_deb(debs.DEBS[0], tmp_path)
    assert list(tmp_path.iterdir()) == []


def _fake_build(python, specs, target):
    """Stands in for the real build (minutes): counts itself, is slow, and leaves a sealed runner."""
    with open(target.parent.parent / "builds.count", "a") as fh:
        fh.write("1\n")
    import time

    time.sleep(1)
    tmp = target.parent / f".{target.name[:16]}-fake"
    tmp.mkdir()
    (tmp / prepare.INFO).write_text('{"python": "3.13.5", "lock": [], "mount_at": "/opt/tbflow/runner"}\n')
    write_manifest(tmp)
    os.rename(tmp, target)


def _prepare_in_child(cache: str, queue) -> None:
    os.environ["TBFLOW_CACHE_DIR"] = cache
    prepare._build = _fake_build
    queue.put(prepare.prepare_runner("3.13", ["pytest==8.4.1"]).digest)


def test_two_jobs_preparing_at_once_build_once_and_get_the_same_runner(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_prepare_in_child, args=(str(tmp_path), queue)) for _ in range(2)]
    for p in procs:
        p.start()
    digests = [queue.get(timeout=60) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert (tmp_path / "supplied-runner/builds.count").read_text() == "1\n"
    assert digests[0] == digests[1]
    assert [p.name for p in (tmp_path / "supplied-runner/builds").iterdir()] == [prepare.cache_key("3.13.5", ["pytest==8.4.1"])]


def test_an_unreachable_index_is_a_typed_refusal(monkeypatch):
    from tasks_lib.container.supplied_runner import wheels

    monkeypatch.setenv("TBFLOW_PYPI_INDEX", "http://127.0.0.1:9/simple")
    with pytest.raises(RunnerUnavailable, match="cannot be reached"):
        wheels.resolve("3.13", ["pytest==8.4.1"])


def test_a_build_killed_midway_is_cleared_before_the_next(tmp_path, monkeypatch):
    monkeypatch.setenv("TBFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(prepare, "_build", _fake_build)
    key = prepare.cache_key("3.13.5", ["pytest==8.4.1"])
    dead = tmp_path / "supplied-runner/builds" / f".{key[:16]}-killed/runner"
    dead.mkdir(parents=True)
    dead.chmod(0o555)
    prepare.prepare_runner("3.13", ["pytest==8.4.1"])
    assert [p.name for p in (tmp_path / "supplied-runner/builds").iterdir()] == [key]


def test_wheels_built_for_older_manylinux_are_accepted():
    """pip widens only the legacy aliases, never an explicit manylinux_2_28: pandas 2.3.2 (tagged
    manylinux_2_17 / manylinux2014 only) was refused before every tag was named."""
    from tasks_lib.container.supplied_runner import wheels

    flags = wheels.target_flags("3.13")
    named = {flags[i + 1] for i, f in enumerate(flags) if f == "--platform"}
    assert {"manylinux_2_28_x86_64", "manylinux_2_17_x86_64", "manylinux2014_x86_64", "manylinux_2_5_x86_64"} <= named
    assert "manylinux_2_29_x86_64" not in named
    assert flags[flags.index("--abi") + 1] == "cp313"


def test_the_minor_and_the_full_version_share_one_runner(tmp_path, monkeypatch):
    monkeypatch.setenv("TBFLOW_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(prepare, "_build", _fake_build)
    assert prepare.prepare_runner("3.13", ["pytest==8.4.1"]) == prepare.prepare_runner("3.13.5", ["pytest==8.4.1"])
    assert (tmp_path / "supplied-runner/builds.count").read_text() == "1\n"
