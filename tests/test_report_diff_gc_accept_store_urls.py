"""``tbflow report s3://…`` mangled the URL into a path, a report on a trial machine's working copy
silently reported only that machine's trials, and ``gc --jobs-dir s3://…`` matched nothing. The
store (moto's S3 on loopback) now holds a job of four trials; a working copy holds two."""

import os
import shutil
import socket
import subprocess
import sys

import pytest

from report_fixtures import make_job, make_trial, write_job_dir
from s3_store import s3  # noqa: F401 - a fixture
from tasks_lib.store.job_store import JobStore
from tasks_lib.store.remote_store import working_root
from tbflow_process import ROOT

CLI = [sys.executable, "-m", "flows.cli.main"]


def tbflow(*args, env=None):
    return subprocess.run([*CLI, *args], cwd=ROOT, env=env or dict(os.environ), capture_output=True, text=True,
                          timeout=300)


def store_job(s3, tmp_path, name="demo-job", rewards=(1.0, 1.0, 0.0, 1.0)):  # noqa: F811
    """A job of len(rewards) trials in the store, as a run with --jobs-dir s3://… leaves it; its URL."""
    url = f"s3://{s3.bucket}/jobs"
    trials = [make_trial(f"t{i}", reward=r) for i, r in enumerate(rewards)]
    job = make_job(trials, name=name)
    job.location = f"{url}/{name}{' (working copy '}{socket.gethostname()}:{working_root(url) / name})"
    src = write_job_dir(tmp_path / "made", job, trials)
    s3.fs().put(str(src), f"{s3.bucket}/jobs/{name}", recursive=True)
    return url


def test_report_of_a_store_url_reads_every_trial_and_writes_back(s3, tmp_path):  # noqa: F811
    url = store_job(s3, tmp_path)
    res = tbflow("report", f"{url}/demo-job")
    assert res.returncode == 0, res.stdout + res.stderr
    assert "demo-job: 4 trials, 4 scored, 0 invalid" in res.stdout, res.stdout
    assert f"in {url}/demo-job (working copy" in res.stdout
    report = s3.fs().cat_file(f"{s3.bucket}/jobs/demo-job/report.md").decode()
    assert "over **4** scored of 4 trials" in report, report[:600]


def test_report_on_a_working_copy_pulls_what_other_machines_recorded(s3, tmp_path):  # noqa: F811
    url = store_job(s3, tmp_path)
    copy = working_root(url) / "demo-job"
    copy.mkdir(parents=True)
    shutil.copy(tmp_path / "made" / "demo-job" / "job.json", copy / "job.json")
    made = JobStore(tmp_path / "made" / "demo-job")
    for t in ("t0__oracle__1", "t1__oracle__1"):  # what this machine's shard ran
        shutil.copytree(made.trial_dir(t), JobStore(copy).trial_dir(t))
    res = tbflow("report", str(copy), "--no-write")
    assert res.returncode == 0 and "demo-job: 4 trials" in res.stdout, res.stdout + res.stderr

    unreachable = dict(os.environ, AWS_ENDPOINT_URL="http://127.0.0.1:1")
    shutil.rmtree(JobStore(copy).trial_dir("t3__oracle__1"))
    res = tbflow("report", str(copy), "--no-write", env=unreachable)
    assert res.returncode == 0 and "demo-job: 3 trials" in res.stdout, res.stdout + res.stderr
    assert f"is a working copy of {url}/demo-job, which could not be read" in res.stderr, res.stderr
    assert "only the trials recorded in the copy are shown" in res.stderr


def test_diff_of_two_store_jobs(s3, tmp_path):  # noqa: F811
    url = store_job(s3, tmp_path, "night-1", (1.0, 0.0, 0.0, 1.0))
    store_job(s3, tmp_path, "night-2", (1.0, 1.0, 0.0, 1.0))
    res = tbflow("diff", f"{url}/night-1", f"{url}/night-2", "--format", "json")
    assert res.returncode == 0, res.stdout + res.stderr
    assert '"t1"' in res.stdout and "night-2" in res.stdout


def test_a_store_url_without_a_job_is_one_line_naming_the_argument(s3, tmp_path):  # noqa: F811
    res = tbflow("report", f"s3://{s3.bucket}/jobs/nothing-here")
    assert res.returncode == 2 and "JOB_DIR" in res.stderr and "not a tbflow job" in res.stderr, res.stderr
    assert len(res.stderr.strip().splitlines()) == 1


@pytest.mark.docker
def test_gc_with_a_store_url_removes_orphans_of_its_working_copies(s3, tmp_path, docker_ready):  # noqa: F811
    from tasks_lib.container.docker_client import LABEL_JOB_DIR, LABEL_ROOT, LABEL_TRIAL

    url = store_job(s3, tmp_path)
    copy = working_root(url) / "demo-job"
    copy.mkdir(parents=True)
    orphan = docker_ready.containers.create("tbflow/base:bookworm", ["sleep", "infinity"], network_mode="none",
                                            labels={LABEL_ROOT: "1", LABEL_TRIAL: "t0.oracle.1",
                                                    LABEL_JOB_DIR: str(copy.resolve())})
    try:
        res = tbflow("gc", "--jobs-dir", url, "--dry-run")
        assert res.returncode == 0 and f"would remove 1 container(s) of {copy.resolve()}" in res.stdout, res.stdout
        res = tbflow("gc", "--jobs-dir", f"s3://{s3.bucket}/other")
        assert "removed 0 orphan container(s)" in res.stdout, res.stdout
    finally:
        orphan.remove(force=True)
