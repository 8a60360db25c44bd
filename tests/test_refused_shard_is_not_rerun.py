"""Issue 10: a shard refused for bad input on its machine must not be re-submitted (the same input
would be refused again, in a loop), unlike a lost one. Fault injected: the only trial worker runs
in a mount namespace where the shared jobs dir is an empty tmpfs (a machine that does not mount
the job storage), so its shard refuses ("not a tbflow job directory"). The job completes after
that one shard run, its trials reported as not recorded, and its log says why they were not
re-run; the refused run's state is a one-line Failed named Refused."""

import shutil

import pytest

from shard_stack import ShardStack
from task_factory import make_task


@pytest.mark.docker
@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1) for a worker without the job storage")
def test_a_shard_refused_for_bad_input_is_not_rerun(docker_ready, tmp_path):
    ds, shared = tmp_path / "ds", tmp_path / "shared"
    jobs = shared / "jobs"
    jobs.mkdir(parents=True)
    make_task(ds, "t1")
    stack = ShardStack(tmp_path)
    try:
        stack.worker("no-storage", "trials",
                     prefix=["unshare", "--mount", "--propagation", "private", "bash", "-c",
                             f"mount -t tmpfs tmpfs {shared} && exec \"$@\"", "worker"])
        res = stack.sh(f"prefect deployment run tbflow-job/examples-oracle --param dataset={ds} "
                       f"--param jobs_dir={jobs} --param 'job_name=\"nostore\"' --param shards=1 --watch", timeout=600)
        assert res.returncode == 1 and "finished in state '1 unrecorded'" in res.stdout + res.stderr, res.stdout + res.stderr

        job_run = stack.job_run()  # a trial without a record: the job needs a look (issue 31), red
        assert (job_run["state"]["type"], job_run["state"]["name"]) == ("FAILED", "1 unrecorded"), job_run["state"]
        (shard,) = stack.shard_runs()
        assert (shard["state"]["type"], shard["state"]["name"]) == ("FAILED", "Refused"), shard["state"]
        assert "not a tbflow job directory" in shard["state"]["message"], shard["state"]
        assert "\n" not in shard["state"]["message"]
        assert "Trials without a record (1)" in (jobs / "nostore" / "report.md").read_text()
        lines = [x["message"] for x in stack.api.logs(job_run["id"])]
        (line,) = [x for x in lines if "not re-run" in x]
        assert line.startswith("shard 1/1 (flow run 'nostore shard 1/1') ended Refused: "), line
        assert "its 1 unrecorded trials are not re-run (the same input would be refused again)" in line, line
    finally:
        stack.close()
