"""Issue 10: the coordinator re-submits a lost shard's unrecorded trials, but a shard that keeps
failing must not be re-submitted forever, and the job must still say which trials it never
recorded. Fault injected: the only trial worker's flow-run processes die at start (a
``sitecustomize`` on its PYTHONPATH), so every shard run ends Crashed. The job, started the way a
user starts it (``prefect deployment run`` with ``shards=1 shard_reruns=2``), submits the shard
and exactly 2 re-runs of it, then completes with both trials listed as not recorded, and its log
says each time which shard was lost, its state, and what was re-submitted."""

import pytest

from shard_stack import ShardStack
from task_factory import make_task

CRASH_AT_START = "import os\nif os.environ.get('PREFECT__FLOW_RUN_ID'):\n    os._exit(17)\n"


@pytest.mark.docker
def test_a_shard_that_keeps_crashing_is_rerun_twice_then_its_trials_are_reported_unrecorded(docker_ready, tmp_path):
    ds, jobs = tmp_path / "ds", tmp_path / "shared" / "jobs"
    make_task(ds, "t1")
    make_task(ds, "t2")
    crashy = tmp_path / "crashy-site"
    crashy.mkdir()
    (crashy / "sitecustomize.py").write_text(CRASH_AT_START)
    stack = ShardStack(tmp_path)
    try:
        stack.worker("crashy", "trials", PYTHONPATH=str(crashy))
        run = (f"prefect deployment run tbflow-job/examples-oracle --param dataset={ds} --param jobs_dir={jobs} "
               f"--param 'job_name=\"crashy\"' --param shards=1")
        bad = stack.sh(run + " --param shard_reruns=11")
        assert bad.returncode != 0 and "shard_reruns" in bad.stdout + bad.stderr, bad.stdout + bad.stderr
        res = stack.sh(run + " --param shard_reruns=2 --watch", timeout=900)
        assert res.returncode == 1 and "finished in state '2 unrecorded'" in res.stdout + res.stderr, res.stdout + res.stderr

        job_run = stack.job_run()  # no trial recorded: the job needs a look (issue 31), red
        assert (job_run["state"]["type"], job_run["state"]["name"]) == ("FAILED", "2 unrecorded"), job_run["state"]
        shards = stack.shard_runs()
        names = sorted(r["name"] for r in shards)
        assert names == ["crashy shard 1/1", "crashy shard 1/1 (re-run 1)", "crashy shard 1/1 (re-run 2)"], names
        for r in shards:
            assert r["state"]["type"] == "CRASHED", (r["name"], r["state"])
            assert sorted(r["parameters"]["trial_ids"]) == ["t1.oracle.1", "t2.oracle.1"], r["parameters"]

        assert not list((jobs / "crashy").glob("trials/*/trial.json"))
        report = (jobs / "crashy" / "report.md").read_text()
        assert "Trials without a record (2)" in report, report
        assert "t1.oracle.1" in report and "t2.oracle.1" in report

        lines = [x["message"] for x in stack.api.logs(job_run["id"])]
        resubmitted = [x for x in lines if "re-submitted them as" in x]
        assert len(resubmitted) == 2, lines
        for k, line in enumerate(resubmitted):
            earlier = "crashy shard 1/1" + (f" (re-run {k})" if k else "")
            assert line.startswith(f"shard 1/1 (flow run '{earlier}') ended Crashed"), line
            assert (f"lost with 2 of its 2 trials not recorded: re-submitted them as 'crashy shard 1/1 "
                    f"(re-run {k + 1})'") in line, line
        (gave_up,) = [x for x in lines if "no re-run left" in x]
        assert gave_up.startswith("shard 1/1 (flow run 'crashy shard 1/1 (re-run 2)') ended Crashed"), gave_up
        assert "2 trials not recorded and no re-run left (shard_reruns=2)" in gave_up, gave_up
    finally:
        stack.close()
