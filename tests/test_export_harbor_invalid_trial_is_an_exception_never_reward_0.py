"""``tbflow export --format harbor``: the mapping from tbflow records to Harbor's documents (pure,
no Docker). The failure pinned: an invalid trial exported as reward 0 would enter Harbor's mean
(and a leaderboard score) as a failure of the agent; it must be an exception with tbflow's reason,
no rewards, its flags kept, and the leaderboard rules the job breaks must be named."""

from __future__ import annotations

import json

import typer
from atif_fixture import write_trajectory
from report_fixtures import make_job, make_trial, write_job_dir
from typer.testing import CliRunner

from flows.cli.export_cli import register
from tasks_lib.publish.harbor_export import export_harbor
from tasks_lib.publish.harbor_map import exception_info, job_result, trial_result
from tasks_lib.publish.leaderboard_rules import rule_breaks
from tasks_lib.records.record_models import TrialFlag


def _trials():
    scored = make_trial("hello", "codex", 1, reward=1.0, model="openai/gpt-test")
    scored = scored.model_copy(update={"flags": [TrialFlag(kind="tampering", message="reward.txt rewritten",
                                                           evidence="verifier/tamper.log")]})
    failed = make_trial("hello", "codex", 2, reward=0.0, model="openai/gpt-test")
    invalid = make_trial("bye", "codex", 1, invalid="environment", reason="docker build failed: exit 1",
                         model="openai/gpt-test")
    return [scored, failed, invalid]


def test_invalid_trial_is_an_exception_with_its_reason_and_no_reward():
    trials = _trials()
    job = make_job(trials, model="openai/gpt-test")
    out = trial_result(job, trials[2], trials_dir=job.job_name)
    assert out.verifier_result is None, "an invalid trial must carry no reward at all"
    assert out.exception_info is not None
    assert out.exception_info.exception_type == "TbflowInvalidEnvironment"
    assert out.exception_info.exception_message == trials[2].validity.reason
    assert "docker build failed: exit 1" in out.exception_info.exception_message
    assert out.exception_info.policy_override is not None
    assert out.exception_info.policy_override.has_valid_reward is False
    assert exception_info(trials[0]) is None


def test_scored_trial_keeps_reward_name_flags_and_timings():
    trials = _trials()
    job = make_job(trials, model="openai/gpt-test")
    out = trial_result(job, trials[0], trials_dir=job.job_name)
    assert out.task_name == "hello" and out.agent_info.name == "codex"
    assert out.agent_info.model_info is not None and out.agent_info.model_info.provider == "openai"
    assert out.verifier_result is not None and out.verifier_result.rewards == {"reward": 1.0}
    zero = trial_result(job, trials[1], trials_dir=job.job_name)
    assert zero.verifier_result is not None and zero.verifier_result.rewards == {"reward": 0.0}
    assert zero.exception_info is None
    meta = out.agent_result.metadata["tbflow"] if out.agent_result and out.agent_result.metadata else {}
    assert [f["kind"] for f in meta["flags"]] == ["tampering"]
    assert meta["flags"][0]["evidence"] == "verifier/tamper.log"
    assert out.agent_execution is not None and out.verifier is not None
    assert out.agent_execution.finished_at == out.verifier.started_at
    assert out.finished_at == trials[0].ended_at


def test_job_result_counts_the_exception_apart_from_rewards():
    trials = _trials()
    job = make_job(trials, model="openai/gpt-test")
    results = [trial_result(job, t, trials_dir=job.job_name) for t in trials]
    stats = job_result(job, results).stats
    assert stats.n_completed_trials == 3 and stats.n_errored_trials == 1
    (evals,) = stats.evals.values()
    assert evals.exception_stats == {"TbflowInvalidEnvironment": [trials[2].trial_id]}
    assert evals.reward_stats["reward"] == {"1.0": [trials[0].trial_id], "0.0": [trials[1].trial_id]}


def test_rule_breaks_name_attempts_multiplier_and_missing_trajectories():
    trials = _trials()
    job = make_job(trials, model="openai/gpt-test", timeout_multiplier=2.0)
    breaks = {b.rule: b.detail for b in rule_breaks(job, trials, with_trajectory=set())}
    assert "timeout_multiplier 1" in breaks and "2.0" in breaks["timeout_multiplier 1"]
    assert "bye (codex: 0)" in breaks["at least 5 scored trials per task"]
    assert "1 of 1 passing" in breaks["an ATIF trajectory for every passing trial"]
    five = [make_trial("hello", "codex", a, reward=1.0, model="m/x") for a in range(1, 6)]
    assert rule_breaks(make_job(five, attempts=5), five, {t.trial_id for t in five}) == []


def test_export_writes_harbor_layout_reproducibly_and_the_cli_names_broken_rules(tmp_path):
    trials = _trials()
    job = make_job(trials, model="openai/gpt-test", attempts=2)
    job_dir = write_job_dir(tmp_path / "jobs", job, trials)
    write_trajectory(job_dir / "trials" / trials[0].trial_id)
    (job_dir / "trials" / trials[1].trial_id / "agent" / "link").symlink_to("/etc/passwd")
    (job_dir / "trials" / trials[1].trial_id / "agent" / "trajectory.json").write_text('{"forged": 1}')
    summary = export_harbor(job_dir, tmp_path / "out")
    root = tmp_path / "out" / job.job_name
    assert summary.trials == 3 and summary.exceptions == 1 and summary.trajectories == 1
    first = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    assert f"{trials[0].trial_id}/agent/trajectory.json" in first
    assert f"{trials[0].trial_id}/verifier/test-stdout.txt" in first
    assert f"{trials[1].trial_id}/agent/link" not in first, "a symlink among the logs must not be followed"
    assert f"{trials[1].trial_id}/agent/trajectory.json" not in first, "the agent's own file is no trajectory"
    assert first[f"{trials[1].trial_id}/agent/trajectory.agent-written.json"] == b'{"forged": 1}'
    assert json.loads(first["config.json"])["n_attempts"] == 2
    assert (tmp_path / "out" / "metadata.yaml").read_text().count("TODO") >= 2
    export_harbor(job_dir, tmp_path / "out")  # again: replaces its own export, same bytes
    again = {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}
    assert again == first

    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)
    res = CliRunner().invoke(app, ["export", str(job_dir), "--format", "harbor", "--to", str(tmp_path / "cli")])
    assert res.exit_code == 0, res.output
    assert "1 as exceptions" in res.stdout
    assert "at least 5 scored trials per task" in res.stderr
    assert (tmp_path / "cli" / job.job_name / "result.json").is_file()
    bad = CliRunner().invoke(app, ["export", str(tmp_path), "--format", "harbor", "--to", str(tmp_path / "x")])
    assert bad.exit_code == 2 and ("JOB" in bad.stderr or "job.json" in bad.stderr), bad.stderr
