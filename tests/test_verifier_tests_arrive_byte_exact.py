"""The task's tests/ reach the read-only /tests byte for byte: small, big or with a symlink.

They travel as one archive into the /tests volume through the trial's filler container
(``Sandbox.fill_tests``), with CRLF made LF in scripts only. test.sh checks every file's sha256
and mode inside the container and writes reward 1 only when all match; it also checks that
/tests cannot be written from inside, which is what keeps an agent from planting a conftest.py.
"""

from __future__ import annotations

import hashlib
import os

from task_factory import make_task, record_of

ALL_BYTES = bytes(range(256)) * 2 + b"\\c %b %% \\0101 \\n\n"


def _write_tests(tests, extra: dict[str, bytes] | None = None, symlink: bool = False):
    files = {
        "fixtures/all_bytes.bin": ALL_BYTES,
        "fixtures/run.sh": b"#!/bin/sh\r\necho run\r\n",
        "notes.txt": b"keep\r\nthis\r\n",
        "empty.txt": b"",
        "unicode.txt": "naïve – 日本\n".encode(),
        **(extra or {}),
    }
    expected = {"fixtures/run.sh": b"#!/bin/sh\necho run\n", **{k: v for k, v in files.items() if k != "fixtures/run.sh"}}
    for rel, data in files.items():
        (tests / rel).parent.mkdir(parents=True, exist_ok=True)
        (tests / rel).write_bytes(data)
    os.chmod(tests / "fixtures/run.sh", 0o750)
    os.chmod(tests / "notes.txt", 0o600)
    (tests / "nested/empty-dir").mkdir(parents=True)
    if symlink:
        (tests / "link.txt").symlink_to("notes.txt")
    checks = [f'[ "$(sha256sum /tests/{rel} | cut -d" " -f1)" = {hashlib.sha256(data).hexdigest()} ] || bad="$bad {rel}"'
              for rel, data in expected.items()]
    checks += ['[ "$(stat -c %a /tests/fixtures/run.sh)" = 750 ] || bad="$bad mode-run"',
               '[ "$(stat -c %a /tests/notes.txt)" = 600 ] || bad="$bad mode-notes"',
               '[ -d /tests/nested/empty-dir ] || bad="$bad dir"']
    if symlink:
        checks.append('[ -L /tests/link.txt ] || bad="$bad link"')
    checks.append('if touch /tests/conftest.py 2>/dev/null; then bad="$bad writable"; fi')
    script = "#!/bin/bash\r\nbad=''\r\n" + "\r\n".join(checks) + (
        '\r\necho "bad:$bad" > /logs/verifier/facts.txt\r\n'
        'if [ -z "$bad" ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\r\n')
    (tests / "test.sh").write_bytes(script.encode())


def test_small_big_and_symlinked_tests_arrive_byte_exact(run_job, tmp_path):
    ds = tmp_path / "ds"
    small = make_task(ds, "small")
    big = make_task(ds, "big")
    linked = make_task(ds, "linked")
    _write_tests(small / "tests")
    _write_tests(big / "tests", extra={"fixtures/big.bin": os.urandom(200 * 1024)})
    _write_tests(linked / "tests", symlink=True)

    result = run_job(ds)
    for name in ("small", "big", "linked"):
        rec = record_of(result, name)
        facts = (tmp_path / "jobs/job/trials" / rec.trial_id / "verifier/facts.txt").read_text()
        assert facts.strip() == "bad:", (name, facts)
        assert rec.validity.status == "scored" and rec.validity.reward == 1.0, (name, rec.validity)
