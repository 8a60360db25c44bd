"""A full disk under the jobs dir stops the job with one clear line and exit code 4 (not 2: the
input was fine), leaving no container; ``--jobs-dir`` naming a file is bad input: one line, exit 2,
no traceback. The full disk is a 3 MiB tmpfs, never the machine's disk."""

import subprocess
import sys
from pathlib import Path

import pytest

from task_factory import make_task

from tasks_lib.container.docker_client import LABEL_JOB_DIR

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "tasks"
CLI = [sys.executable, "-m", "flows.cli.main"]


@pytest.fixture
def small_fs(tmp_path):
    mnt = tmp_path / "small"
    mnt.mkdir()
    res = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=3m", "tmpfs", str(mnt)], capture_output=True, text=True)
    if res.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here (needs root): {res.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


@pytest.mark.docker
def test_full_disk_stops_the_job_with_exit_4(docker_ready, small_fs):
    ds = small_fs.parent / "ds"
    make_task(ds, "a-fills", test_sh="#!/bin/bash\nhead -c 8000000 /dev/urandom > /logs/verifier/big.bin\n"
                                    "echo 1 > /logs/verifier/reward.txt\n")
    make_task(ds, "b-next")
    jobs = small_fs / "jobs"
    res = subprocess.run([*CLI, "run", str(ds), "--jobs-dir", str(jobs), "--job-name", "j"], cwd=ROOT,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 4, res.stdout[-3000:] + res.stderr[-3000:]
    line = res.stderr.strip().splitlines()[-1]  # (Prefect's own task-run log lines come before it)
    assert line.startswith("tbflow: error: disk full: "), res.stderr[-3000:]
    assert "disk full" in line and "No space left on device" in line and str(jobs) in line, line
    assert docker_ready.containers.list(all=True, filters={"label": f"{LABEL_JOB_DIR}={jobs / 'j'}"}) == []


@pytest.mark.parametrize("below", [False, True])
def test_jobs_dir_that_is_a_file_is_one_line_exit_2(tmp_path, below):
    f = tmp_path / "afile"
    f.write_text("not a dir\n")
    target = f / "jobs" if below else f
    res = subprocess.run([*CLI, "run", str(EXAMPLES), "--jobs-dir", str(target)], cwd=ROOT, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 2, res.stderr
    assert res.stderr.strip().splitlines() == [
        f"tbflow: error: --jobs-dir: {target}: {f} is a file, not a directory"], res.stderr
    assert f.read_text() == "not a dir\n"
