"""What comes out of a container is untrusted: members with absolute paths, '..', links that
leave the destination, or devices are refused before anything is written."""

import io
import tarfile

import pytest

from tasks_lib.container.archives import extract_checked, pack
from tasks_lib.container.log_download import extract_logs
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
    trial record beside them) once the logs/ prefix is stripped: such entries are skipped and
    listed, and everything else still comes out."""
    bad = [link("logs/agent/x", "../verifier/reward.txt"), link("logs/agent/y", "../../trial.json"),
           link("logs/agent/self", "."), link("logs/agent/up", "self/.."), file("logs/agent/up/trial.json"),
           link("logs/agent/abs", "/etc/passwd"), dev("logs/agent/dev"), link("logs/agent/h", "logs/verifier/reward.txt",
                                                                                tarfile.LNKTYPE)]
    data = tar_of(file("logs/agent/a.txt", b"A"), *bad, file("logs/verifier/reward.txt", b"1"),
                  link("logs/agent/inner", "a.txt"), file("logs/other/ignored.txt"), dev("logs/other/dev"))
    out = extract_logs(iter([data[:700], data[700:]]), tmp_path / "t", "logs", ("agent", "verifier"), 1 << 20)
    assert (tmp_path / "t/verifier/reward.txt").read_bytes() == b"1"
    assert (tmp_path / "t/agent/a.txt").read_bytes() == b"A"
    assert (tmp_path / "t/agent/inner").resolve() == (tmp_path / "t/agent/a.txt").resolve()
    assert not (tmp_path / "t/other").exists() and not (tmp_path / "t/trial.json").exists()
    assert sorted(s.path for s in out.skipped) == ["agent/abs", "agent/dev", "agent/h", "agent/up", "agent/x",
                                                   "agent/y"]
    assert (tmp_path / "t/agent/up/trial.json").is_file()  # the skipped link did not lead it out
    assert out.cut == []


def test_log_files_are_cut_at_the_cap(tmp_path):
    data = tar_of(file("logs/agent/big.log", b"x" * 5000), file("logs/agent/small.log", b"y" * 10))
    out = extract_logs(iter([data]), tmp_path, "logs", ("agent",), 1024)
    assert (tmp_path / "agent/big.log").read_bytes() == b"x" * 1024
    assert (tmp_path / "agent/small.log").read_bytes() == b"y" * 10
    assert [(c.path, c.size_bytes, c.kept_bytes) for c in out.cut] == [("agent/big.log", 5000, 1024)]
