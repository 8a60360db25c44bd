"""The relay binary is compiled once per source hash into the cache, static (runs in any image),
concurrent callers never see a partial file, and a failing or missing compiler is a typed error
that carries gcc's output and the install command."""

import struct
import subprocess

import pytest

from concurrently import call_concurrently
from tasks_lib.gateway.relay_build import RELAY_NAME, RELAY_SOURCE, RelayBuildError, ensure_relay_binary, source_digest


def _program_header_types(elf: bytes) -> list[int]:
    """ELF64 program header types; PT_INTERP (3) names a dynamic loader, absent when static."""
    assert elf[:4] == b"\x7fELF" and elf[4] == 2
    phoff, = struct.unpack_from("<Q", elf, 0x20)
    phentsize, phnum = struct.unpack_from("<HH", elf, 0x36)
    return [struct.unpack_from("<I", elf, phoff + i * phentsize)[0] for i in range(phnum)]


def test_built_once_per_source_and_static(tmp_path):
    path = ensure_relay_binary(cache_dir=tmp_path)
    assert path == tmp_path / source_digest() / RELAY_NAME
    assert [p.name for p in path.parent.iterdir()] == [RELAY_NAME]  # the folder can be uploaded as is
    mtime = path.stat().st_mtime_ns
    assert ensure_relay_binary(cache_dir=tmp_path).stat().st_mtime_ns == mtime  # cached, not rebuilt
    assert _program_header_types(path.read_bytes()) and 3 not in _program_header_types(path.read_bytes())
    usage = subprocess.run([str(path)], capture_output=True, text=True, timeout=10)
    assert usage.returncode == 2 and "usage: tbflow-relay LISTEN_PORT UNIX_SOCKET_PATH" in usage.stderr


def test_changed_source_gets_its_own_binary(tmp_path):
    source = tmp_path / "relay.c"
    source.write_text(RELAY_SOURCE.read_text() + "\n/* changed */\n")
    changed = ensure_relay_binary(cache_dir=tmp_path / "cache", source=source)
    original = ensure_relay_binary(cache_dir=tmp_path / "cache")
    assert changed != original and changed.parent.name == source_digest(source)


def test_concurrent_builds_yield_one_complete_binary(tmp_path):
    results, errors = call_concurrently(lambda: ensure_relay_binary(cache_dir=tmp_path), 4)
    assert not errors and len(set(results)) == 1
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == [RELAY_NAME]  # no temp files left
    assert subprocess.run([str(results[0]), "--wait", "1", "0"], capture_output=True).returncode == 1


def test_compile_error_carries_gcc_output(tmp_path):
    bad = tmp_path / "relay.c"
    bad.write_text("int main(void) { return undefined_thing; }\n")
    with pytest.raises(RelayBuildError) as err:
        ensure_relay_binary(cache_dir=tmp_path / "cache", source=bad)
    message = str(err.value)
    assert "undefined_thing" in message and "apt-get install gcc libc6-dev" in message
    assert not list((tmp_path / "cache").rglob(RELAY_NAME))


def test_missing_gcc_says_what_to_install(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    with pytest.raises(RelayBuildError, match="gcc not found.*apt-get install gcc libc6-dev"):
        ensure_relay_binary(cache_dir=tmp_path / "cache")
