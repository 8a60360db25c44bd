"""``[environment] storage_mb`` was ignored (issue 29): on overlay2 over ext4 the engine has no
quota, so an agent could write until the host's disk was full, and every trial after it failed.
tbflow now measures the writable layer while the agent runs (where the engine has a quota it holds
it itself) and counts it in the record (``agent.storage``): an agent past the bound is stopped at
once and scored 0, flagged ``broke-container`` with ``storage.txt`` as evidence, never invalid;
the job goes on, and an honest agent writing a few MB under the same bound is untouched. Real
engine, real Prefect."""

import pytest

from host_plugin_source import REFERENCE_BASE
from task_factory import make_task, record_of

BOUND_MB = 50
HOSTILE = "head -c 400M /dev/zero > /app/fill || true\nsleep 120\n"  # stopped well before its sleep ends
HONEST = ("head -c 3000000 /dev/urandom > /app/data.bin\nfor i in $(seq 2000); do echo \"line $i\"; done\n"
          "echo ok > /app/done.txt\n")


@pytest.mark.docker
def test_agent_past_storage_mb_is_stopped_scored_zero_and_the_job_goes_on(run_job, tmp_path):
    ds = tmp_path / "ds"
    bound = f"storage_mb = {BOUND_MB}\n"
    make_task(ds, "fill", solve=HOSTILE, check="true", agent_timeout=600, extra_toml=bound)
    make_task(ds, "honest", solve=HONEST, check="test -s /app/done.txt && test $(stat -c %s /app/data.bin) -eq 3000000",
              extra_toml=bound)
    result = run_job(ds, concurrency=2)
    trials = tmp_path / "jobs" / "job" / "trials"

    fill = record_of(result, "fill")
    assert (fill.validity.status, fill.validity.reward) == ("scored", 0.0), fill.validity
    (flag,) = [f for f in fill.flags if f.kind == "broke-container"]
    assert f"over the task's storage_mb of {BOUND_MB} MB" in flag.message and flag.evidence == "storage.txt", flag
    evidence = (trials / fill.trial_id / "storage.txt").read_text()
    assert "/app/fill" in evidence, evidence
    written = int(evidence.split("as allocated on the host's disk: ")[1].split()[0])
    assert written > BOUND_MB * 2**20, evidence
    assert not fill.agent.timed_out and fill.agent.exit_code != 0, fill.agent  # stopped, not left to its sleep
    counted = fill.agent.storage
    assert (counted.storage_mb, counted.held_by, counted.exceeded) == (BOUND_MB, "watch", True), counted
    assert counted.used_bytes == written, counted

    honest = record_of(result, "honest")
    assert (honest.validity.status, honest.validity.reward) == ("scored", 1.0), honest.validity
    assert not [f for f in honest.flags if f.kind == "broke-container"], honest.flags
    assert not (trials / honest.trial_id / "storage.txt").exists()
    counted = honest.agent.storage  # counted when the agent ended, under the bound
    assert (counted.held_by, counted.exceeded) == ("watch", False), counted
    assert 3000000 <= counted.used_bytes < BOUND_MB * 2**20, counted


HOST_PLUGIN = REFERENCE_BASE + '''
class Filler(_Base):
    name = "filler"

    def run(self, session):
        for i in range(40):  # 10 MB a command: stopped commands come back at once, the loop ends
            out = session.env.exec(f"head -c 10M /dev/zero > /app/fill{i}")
            if out.timed_out or session.stopped:
                (session.logs_dir / "stopped-at.txt").write_text(str(i))
                return
'''


@pytest.mark.docker
def test_host_agent_past_storage_mb_is_stopped_and_scored_zero(run_job, tmp_path):
    plugin = tmp_path / "plugin.py"
    plugin.write_text(HOST_PLUGIN)
    make_task(tmp_path / "ds", "fill", check="true", agent_timeout=600, extra_toml=f"storage_mb = {BOUND_MB}\n")
    rec = record_of(run_job(tmp_path / "ds", harnesses=[f"{plugin}:Filler"]), "fill", "filler")
    assert (rec.validity.status, rec.validity.reward) == ("scored", 0.0), rec.validity
    (flag,) = [f for f in rec.flags if f.kind == "broke-container"]
    assert f"over the task's storage_mb of {BOUND_MB} MB" in flag.message, flag
    stopped_at = int((tmp_path / "jobs" / "job" / "trials" / rec.trial_id / "host-agent" / "stopped-at.txt").read_text())
    assert stopped_at < 39 and rec.agent.storage.exceeded, (stopped_at, rec.agent.storage)
