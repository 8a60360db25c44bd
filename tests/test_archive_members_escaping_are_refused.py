"""What comes out of a container is untrusted: members with absolute paths, '..', links that
leave the destination, or devices are refused before anything is written."""

import io
import tarfile

import pytest

from tasks_lib.container.archives import extract_checked, extract_subdirs_checked, pack
from tasks_lib.errors import UnsafeArchiveError


def tar_of(*members):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def file(name, data=b"x"):
    i = tarfile.TarInfo(name)
    i.size = len(data)
    return i, data


def link(name, target, kind=tarfile.SYMTYPE):
    i = tarfile.TarInfo(name)
    i.type = kind
    i.linkname = target
    return i, None


def dev(name):
    i = tarfile.TarInfo(name)
    i.type = tarfile.CHRTYPE
    return i, None


@pytest.mark.parametrize("member", [
    file("/etc/passwd"), file("agent/../../escape"), file("../escape"), file("other/x"),
    link("agent/l", "/etc/passwd"), link("agent/l", "../../outside"), link("agent/h", "/etc/shadow", tarfile.LNKTYPE),
    dev("agent/dev"),
])
def test_unsafe_member_is_refused_and_nothing_written(tmp_path, member):
    data = tar_of(file("agent/ok.txt"), member)
    with pytest.raises(UnsafeArchiveError):
        extract_checked(iter([data]), tmp_path / "out", "agent")
    assert not (tmp_path / "out").exists()
    assert not (tmp_path / "escape").exists()


def test_safe_members_extract(tmp_path):
    data = tar_of(file("agent/ok.txt", b"hello"), link("agent/inner", "ok.txt"))
    names = extract_checked(iter([data[:10], data[10:]]), tmp_path, "agent")
    assert "agent/ok.txt" in names
    assert (tmp_path / "agent" / "ok.txt").read_bytes() == b"hello"


def test_pack_normalises_crlf_in_scripts_only(tmp_path):
    src = tmp_path / "tests"
    src.mkdir()
    (src / "test.sh").write_bytes(b"#!/bin/bash\r\necho hi\r\n")
    (src / "data.bin").write_bytes(b"a\r\nb\0")
    (src / "notes.txt").write_bytes(b"keep\r\n")
    blob = pack([(src, "/stage/tests")], normalise_crlf=True)
    with tarfile.open(fileobj=io.BytesIO(blob)) as tar:
        got = {m.name: tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    assert got["stage/tests/test.sh"] == b"#!/bin/bash\necho hi\n"
    assert got["stage/tests/data.bin"] == b"a\r\nb\0"
    assert got["stage/tests/notes.txt"] == b"keep\r\n"


def test_one_logs_download_keeps_each_dir_to_itself(tmp_path):
    """/logs comes down in one archive; a link in agent/ must not reach into verifier/ (or the
    trial record beside them) once the logs/ prefix is stripped."""
    ok = tar_of(file("logs/agent/a.txt", b"A"), file("logs/verifier/reward.txt", b"1"),
                link("logs/agent/inner", "a.txt"), file("logs/other/ignored.txt"), dev("logs/other/dev"))
    names = extract_subdirs_checked(iter([ok]), tmp_path / "t", "logs", ("agent", "verifier"))
    assert sorted(names) == ["agent/a.txt", "agent/inner", "verifier/reward.txt"]
    assert (tmp_path / "t/verifier/reward.txt").read_bytes() == b"1"
    assert not (tmp_path / "t/other").exists()
    for bad in (link("logs/agent/x", "../verifier/reward.txt"), link("logs/agent/x", "../../trial.json"),
                file("logs/../escape"), file("/logs/agent/abs")):
        with pytest.raises(UnsafeArchiveError):
            extract_subdirs_checked(iter([tar_of(file("logs/agent/a.txt"), bad)]), tmp_path / "u", "logs",
                                    ("agent", "verifier"))
        assert not (tmp_path / "u").exists()
