"""The example tasks calibrate the runner: oracle scores 1 and nop 0 on every one of them."""

import time
from pathlib import Path

from task_factory import record_of

EXAMPLES = Path(__file__).resolve().parents[1] / "examples" / "tasks"


def test_oracle_scores_one_and_nop_zero_on_every_example(run_job):
    result = run_job(EXAMPLES, harnesses=["oracle", "nop"], concurrency=2)
    names = sorted(p.name for p in EXAMPLES.iterdir() if (p / "task.toml").exists())
    assert len(names) >= 3
    assert len(result.records) == 2 * len(names)
    for name in names:
        oracle, nop = record_of(result, name, "oracle"), record_of(result, name, "nop")
        assert (oracle.validity.status, oracle.validity.reward) == ("scored", 1.0), oracle.validity
        assert (nop.validity.status, nop.validity.reward) == ("scored", 0.0), nop.validity
    job_dir = Path(result.job_dir)
    assert (job_dir / "job.json").is_file()
    trial = job_dir / "trials" / "fix-config.oracle.1"
    assert (trial / "trial.json").is_file()
    assert (trial / "agent" / "oracle.txt").is_file()
    assert (trial / "verifier" / "test-stdout.txt").read_text().count("passed") >= 1


def test_server_started_with_ampersand_still_answers_for_the_verifier(run_job, docker_ready):
    since = time.time() - 1
    result = run_job(EXAMPLES, harnesses=["oracle"], include=["status-server"])
    created = list(docker_ready.events(since=since, until=time.time() + 1, decode=True, filters={
        "type": "container", "event": "create", "label": f"tbflow.job={result.job_id}"}))
    fillers = [e for e in created if e["Actor"]["Attributes"].get("tbflow.role") == "filler"]
    created = [e for e in created if e not in fillers]
    assert len(created) == 1 and len(fillers) == 1  # the trial's container and the one owning its judge volumes
    # the cancellation hook finds a run's containers by this label
    assert created[0]["Actor"]["Attributes"].get("tbflow.flow_run")
    rec = record_of(result, "status-server")
    assert rec.validity.reward == 1.0
    assert rec.kill is not None and not rec.kill.cut_off and rec.kill.killed == []
    assert any("http.server" in p.command for p in rec.kill.left_running), rec.kill.left_running
    # the service the agent left is expected, and shown
    assert [f.kind for f in rec.flags] == ["agent-processes"], rec.flags
