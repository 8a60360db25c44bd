"""The example tasks calibrate the runner: oracle scores 1 and nop 0 on every one of them."""

from pathlib import Path

from container_events import JobContainerEvents
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


def test_server_started_with_ampersand_still_answers_for_the_verifier(run_job, docker_ready, tmp_path):
    with JobContainerEvents(docker_ready, job_dir=tmp_path / "jobs" / "job") as seen:
        result = run_job(EXAMPLES, harnesses=["oracle"], include=["status-server"])
    fillers = [a for a in seen.created if a.get("tbflow.role") == "filler"]
    created = [a for a in seen.created if a not in fillers]
    # the engine runs here: the judge's tools and /tests are read-only binds, no filler container
    assert len(created) == 1 and not fillers
    assert {a.get("tbflow.job") for a in seen.created} == {result.job_id}
    # the cancellation hook finds a run's containers by this label
    assert created[0].get("tbflow.flow_run")
    rec = record_of(result, "status-server")
    assert rec.validity.reward == 1.0
    assert rec.kill is not None and not rec.kill.cut_off and rec.kill.killed == []
    assert any("http.server" in p.command for p in rec.kill.left_running), rec.kill.left_running
    # the service the agent left is expected, and shown
    assert [f.kind for f in rec.flags] == ["agent-processes"], rec.flags
