"""A deployment's model key from a Prefect Secret block (``key_secrets``, flows/job/model_keys.py),
on a real server and workers (127.0.0.1, a free port): the documented deployment
``tbflow-job/agent-with-secret-key`` names the block ``openai-key``; the job is split into one
shard, so the coordinator checks the key on its worker and the shard loads it itself on the
trial worker (which has the mock model's base URL and no key). The trial is scored and the mock
saw the block's canary as the upstream key (so the block was what served it), yet the canary is
in no byte of Prefect's database (parameters, logs, artifacts, events, states: all of it), the
job directory or the workers' and server's logs. The server also refuses, before a run exists, a
``jobs_dir`` with credentials in its URL and a block for a variable that is not a model key.
"""

import sqlite3
import subprocess

import pytest

from cli_model import solvable_task
from mock_model import MockModel
from s3_store import files_under
from shard_stack import VENV, ShardStack
from tasks_lib.store.job_store import JobStore

pytestmark = pytest.mark.docker

CANARY = "sk-canary-from-secret-block-5b1f0c9e7d2a"
URL_SECRET = "wJalrXUtnFEMIK7MDENGbPxRfiCYcanaryINURL"
SAVE_BLOCK = "import sys; from prefect.blocks.system import Secret; Secret(value=sys.stdin.read()).save('openai-key')"


def _holding(blobs: dict[str, bytes], secret: str) -> list[str]:
    return sorted(name for name, data in blobs.items() if secret.encode() in data)


def _tables_holding(db: str, secret: str) -> list[str]:
    """The tables of Prefect's SQLite database with a row holding ``secret`` (read once stopped)."""
    con = sqlite3.connect(db)
    try:
        names = [r[0] for r in con.execute("select name from sqlite_master where type='table'")]
        return sorted(t for t in names
                      if any(secret.encode() in repr(row).encode() for row in con.execute(f'select * from "{t}"')))
    finally:
        con.close()


def test_model_key_from_a_secret_block_reaches_no_parameter_log_or_record(docker_ready, tmp_path):
    ds = solvable_task(tmp_path / "ds", agent_timeout=120)
    jobs = tmp_path / "jobs"
    with MockModel("echo solved > /app/done.txt") as mock:
        stack = ShardStack(tmp_path)
        try:
            res = subprocess.run([str(VENV / "python"), "-c", SAVE_BLOCK], input=CANARY, env=stack.env,
                                 capture_output=True, text=True, timeout=120)
            assert res.returncode == 0, res.stderr
            stack.worker("trial-machine", "trials", TBFLOW_OPENAI_BASE_URL=f"{mock.base_url}/v1")

            run = "prefect deployment run tbflow-job/agent-with-secret-key"
            for bad, words in ((f"--param 'jobs_dir=\"s3://AKIAEXAMPLE:{URL_SECRET}@bucket/jobs\"'", "jobs_dir"),
                               ("--param 'key_secrets={\"AWS_SECRET_ACCESS_KEY\": \"aws\"}'", "key_secrets")):
                res = stack.sh(f"{run} {bad}")
                assert res.returncode != 0 and words in res.stdout + res.stderr, res.stdout + res.stderr
            assert stack.api.flow_runs() == [], "the server created a run for invalid parameters"

            res = stack.sh(f"{run} --param 'dataset=\"{ds}\"' --param 'model=\"mock/mock-model\"' "
                           f"--param 'jobs_dir=\"{jobs}\"' --param 'job_name=\"keyed\"' --param shards=1 --watch",
                           timeout=600)
            logs = {n: (tmp_path / f"{n}.log").read_text(errors="replace") for n in ("coordinator", "trial-machine")}
            assert res.returncode == 0, f"{res.stdout}\n{res.stderr}\n{logs['coordinator'][-3000:]}\n" \
                                        f"{logs['trial-machine'][-3000:]}"
            job_run = stack.job_run()
            assert job_run["parameters"]["key_secrets"] == {"OPENAI_API_KEY": "openai-key"}
            assert [r["state"]["type"] for r in stack.shard_runs()] == ["COMPLETED"]
        finally:
            stack.close()  # the server flushes what it holds (events, logs) into its database
        seen = [r["headers"].get("authorization") for r in mock.requests if r["path"].endswith("/chat/completions")]
        assert seen and set(seen) == {f"Bearer {CANARY}"}, seen

    store = JobStore(jobs / "keyed")
    record = store.read_trial("make-done.tbflow-agent.1")
    assert record is not None and (record.validity.status, record.validity.reward) == ("scored", 1.0), record
    job = store.read_job()
    assert job.config["key_secrets"] == {"OPENAI_API_KEY": "openai-key"}  # the names are recorded, as parameters
    assert job.identity is not None and "key_secrets" not in job.identity.config  # a new key is the same job

    # Prefect's SQLite database keeps the block's value encrypted (block_document.data is Fernet
    # ciphertext, its key in the configuration table): no table holds the canary's bytes.
    home = tmp_path / "prefect-home"
    (db,) = home.glob("*.db")
    assert "flow_run" in _tables_holding(str(db), "openai-key")  # the scan reads the rows (the names are there)
    assert _tables_holding(str(db), CANARY) == []
    assert _tables_holding(str(db), URL_SECRET) == []
    everywhere = {**files_under(home, jobs),
                  **{n: (tmp_path / n).read_bytes() for n in ("coordinator.log", "trial-machine.log", "server.log")}}
    assert any(p.endswith(".db") for p in everywhere)
    assert _holding(everywhere, CANARY) == []
    assert _holding(everywhere, URL_SECRET) == []
