"""``tbflow export s3://…``: the failure pinned is an export of a job in a store that holds only
the records (a working copy pulls records and report tails, not every log), so the trajectory and
the logs the leaderboard wants would silently be missing. The store is moto's S3 on loopback."""

import json
import os
import subprocess
import sys

from atif_fixture import trajectory
from report_fixtures import make_job, make_trial, write_job_dir
from s3_store import s3  # noqa: F401 - a fixture
from tbflow_process import ROOT

from tasks_lib.report.html.render_html import trial_page_name


def tbflow(*args):
    """The real command line in its own process (a fresh S3 client for this test's server)."""
    return subprocess.run([sys.executable, "-m", "flows.cli.main", *args], cwd=ROOT, env=dict(os.environ),
                          capture_output=True, text=True, timeout=300)


def test_export_of_a_store_url_has_every_trial_log_and_trajectory(s3, tmp_path):  # noqa: F811
    trials = [make_trial("hello", reward=1.0), make_trial("bye", reward=0.0)]
    src = write_job_dir(tmp_path / "made", make_job(trials, name="stored"), trials)
    (src / "trials" / trials[0].trial_id / "trajectory.json").write_text(json.dumps(trajectory()))
    s3.fs().put(str(src), f"{s3.bucket}/jobs/stored", recursive=True)

    out = tmp_path / "out"
    res = tbflow("export", f"s3://{s3.bucket}/jobs/stored", "--format", "harbor", "--to", str(out))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "2 trials (0 as exceptions" in res.stdout and "1 trajectories" in res.stdout
    for t in trials:
        assert (out / "stored" / t.trial_id / "verifier" / "test-stdout.txt").is_file()
        assert (out / "stored" / t.trial_id / "agent" / "stderr.txt").is_file()
    steps = json.loads((out / "stored" / trials[0].trial_id / "agent" / "trajectory.json").read_text())["steps"]
    assert len(steps) == 3


def test_report_of_a_store_url_uploads_report_html_with_the_trajectory_shown(s3, tmp_path):  # noqa: F811
    trials = [make_trial("hello", reward=1.0)]
    src = write_job_dir(tmp_path / "made", make_job(trials, name="paged"), trials)
    (src / "trials" / trials[0].trial_id / "trajectory.json").write_text(json.dumps(trajectory()))
    s3.fs().put(str(src), f"{s3.bucket}/jobs/paged", recursive=True)
    res = tbflow("report", f"s3://{s3.bucket}/jobs/paged")
    assert res.returncode == 0, res.stdout + res.stderr
    fs = s3.fs()
    assert b"hello" in fs.cat_file(f"{s3.bucket}/jobs/paged/report.html")
    page = fs.cat_file(f"{s3.bucket}/jobs/paged/report-trials/{trial_page_name(trials[0].trial_id)}").decode()
    assert "tool call <strong>shell</strong>" in page and "no trajectory recorded" not in page
