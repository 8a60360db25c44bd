"""A ``--jobs-dir`` URL that cannot be used — a bucket that does not exist, a store that does not
answer, an unknown scheme, credentials written into the URL — is bad input: exit 2 with one line
naming ``--jobs-dir``, before any container starts and without writing to the store."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from s3_store import SECRET, s3  # noqa: F401 - s3 is a fixture

ROOT = Path(__file__).resolve().parents[1]
CLI = [sys.executable, "-m", "flows.cli.main"]


def _run(args, env):
    return subprocess.run([*CLI, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("url, says", [
    ("s3://no-such-bucket/jobs", "the bucket 'no-such-bucket' does not exist"),
    ("UNREACHABLE", "cannot reach the store"),
    ("nosuchscheme://x/jobs", "not a usable storage URL"),
    (f"s3://AKIAX:{SECRET}@BUCKET/jobs", "credentials in the URL are refused"),
])
def test_bad_store_url_is_one_line_naming_jobs_dir(s3, tmp_path, url, says):  # noqa: F811
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    if url == "UNREACHABLE":  # a store that does not answer (nothing listens on port 1)
        env["AWS_ENDPOINT_URL"] = "http://127.0.0.1:1"
        url = f"s3://{s3.bucket}/jobs"
    url = url.replace("BUCKET", s3.bucket)
    before = set(s3.fs().find(s3.bucket))
    for args in (["run", str(ROOT / "examples" / "tasks"), "--jobs-dir", url, "--job-name", "j"],
                 ["resume", f"{url}/j"]):
        res = _run(args, env)
        assert res.returncode == 2, res.stdout + res.stderr
        line = res.stderr.strip()
        assert len(line.splitlines()) == 1 and "Traceback" not in line, line
        assert line.startswith("tbflow: error: --jobs-dir: ") and says in line, line
        assert SECRET not in line
    assert set(s3.fs().find(s3.bucket)) == before, "nothing was written to the store"
