"""tbflow's task digest is Harbor's ``Packager.compute_content_hash``, so the digests it records
compare with Harbor's. The expected value is computed here by hand, with hashlib, from the rules
(and pinned as a literal), so the implementation cannot drift from the spec unnoticed."""

import hashlib

from tasks_lib.dataset.digest import dataset_digest, task_digest

FILES = {
    "task.toml": b'version = "1.0"\n',
    "instruction.md": b"Say hi.\n",
    "README.md": b"notes\n",
    "environment/Dockerfile": b"FROM scratch\n",
    "tests/test.sh": b"#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n",
    "solution/solve.sh": b"#!/bin/bash\ntrue\n",
    "steps/one/x.txt": b"x\n",
    # not covered: other top-level files, default ignores
    "notes.txt": b"not part of the task package\n",
    "tests/__pycache__/t.cpython-311.pyc": b"\0\0",
    "tests/helper.pyc": b"\0",
    "solution/.solve.sh.swp": b"swap",
    "environment/backup~": b"old",
}
COVERED = ["README.md", "environment/Dockerfile", "instruction.md", "solution/solve.sh", "steps/one/x.txt",
           "task.toml", "tests/test.sh"]
GOLDEN = "sha256:dd9c028c00702b7775a8b0d24b81a9c1b3bb15b04adec8d7b58489853324f766"


def _write(root, files):
    for rel, data in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_bytes(data)


def _by_hand(files, covered):
    lines = b"".join(f"{rel}\0{hashlib.sha256(files[rel]).hexdigest()}\n".encode() for rel in sorted(covered))
    return "sha256:" + hashlib.sha256(lines).hexdigest()


def test_task_digest_is_harbors_content_hash(tmp_path):
    _write(tmp_path, FILES)
    assert _by_hand(FILES, COVERED) == GOLDEN
    assert task_digest(tmp_path) == GOLDEN


def test_a_task_gitignore_replaces_the_default_ignores(tmp_path):
    files = {**FILES, ".gitignore": b"tests/*.pyc\nsolution/\n"}
    _write(tmp_path, files)
    covered = [r for r in COVERED if not r.startswith("solution/")]
    covered += ["environment/backup~", "tests/__pycache__/t.cpython-311.pyc"]  # the defaults no longer apply
    assert task_digest(tmp_path) == _by_hand(files, covered)


def test_dataset_digest_joins_sorted_task_digests():
    a, b = "sha256:" + "b" * 64, "sha256:" + "a" * 64
    assert dataset_digest([a, b]) == "sha256:" + hashlib.sha256(("a" * 64 + "," + "b" * 64).encode()).hexdigest()
