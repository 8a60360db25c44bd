"""A hostile agent, root in its container, attacks tbflow's judge instead of solving the task.

One job runs every attack of ``hostile_attacks.ATTACKS`` (each an unsolvable task whose honest
reward is 0); each test below pins what the record of one attack says. The promise (docs/judge.md): never a forged 1, never an escape to invalid, never a hung job, always a record, and
what tbflow cannot prevent is flagged with evidence.
"""

from __future__ import annotations

import json
import os

import pytest

from hostile_attacks import ATTACKS, STRIKE_BEFORE_DOWNLOAD, hold_download
from task_factory import job_result, make_task, record_of

pytestmark = pytest.mark.docker


@pytest.fixture(scope="module")
def hostile(docker_ready, prefect_local, tmp_path_factory):
    from flows.job.job_config import JobConfig
    from tasks_lib.container.sandbox import Sandbox

    root = tmp_path_factory.mktemp("hostile")
    for name, kw in ATTACKS.items():
        make_task(root / "ds", name, **{"verifier_timeout": 20, **kw})
    old = os.environ.get("TBFLOW_HISTORY")
    os.environ["TBFLOW_HISTORY"] = str(root / "history.sqlite")
    try:
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(Sandbox, "download_logs", hold_download(Sandbox.download_logs, STRIKE_BEFORE_DOWNLOAD))
            result = job_result(**JobConfig(dataset=str(root / "ds"), jobs_dir=str(root / "jobs"), job_name="job",
                                            concurrency=3, env_retries=0).flow_parameters())
    finally:
        os.environ.pop("TBFLOW_HISTORY") if old is None else os.environ.__setitem__("TBFLOW_HISTORY", old)
    return root / "jobs" / "job", result


def _rec(hostile, name):
    return record_of(hostile[1], name)


def _trial(hostile, rec):
    return hostile[0] / "trials" / rec.trial_id


def _kinds(rec):
    return [f.kind for f in rec.flags]


def _scored(rec, reward=0.0):
    assert (rec.validity.status, rec.validity.reward) == ("scored", reward), rec.validity


def test_every_attack_ends_recorded_and_scored_never_invalid(hostile):
    job, result = hostile
    assert sorted(r.spec.task_name for r in result.records) == sorted(ATTACKS)
    for rec in result.records:
        assert rec.validity.status == "scored", (rec.spec.task_name, rec.validity)
        assert (job / "trials" / rec.trial_id / "trial.json").is_file()
    results = json.loads((job / "results.json").read_text())
    assert results["summaries"][0]["invalid"] == 0


def test_sh_shim_appending_a_reward_after_test_sh_forges_nothing(hostile):
    rec = _rec(hostile, "sh-shim")
    _scored(rec)
    # test.sh never ran sh: the planted shim is shown, not held against the agent
    assert "toolchain-changed" not in _kinds(rec), rec.flags
    assert any("changed /usr/bin/dash" in f.message for f in rec.flags if f.kind == "system-changed"), rec.flags


def test_od_first_in_path_forges_nothing(hostile):
    _scored(_rec(hostile, "od-first-in-path"))


def test_bash_first_in_path_forges_nothing_and_is_shown(hostile):
    rec = _rec(hostile, "bash-first-in-path")
    _scored(rec)
    # tbflow's judge runs test.sh with its own bash: the planted one is never used, only shown
    assert any("added /usr/local/bin/bash" in f.message for f in rec.flags if f.kind == "system-changed"), rec.flags
    assert "toolchain-changed" not in _kinds(rec), rec.flags


def test_carriage_return_in_a_leftover_command_line_injects_no_reward(hostile):
    rec = _rec(hostile, "cr-in-command-line")
    _scored(rec)
    assert any("reward.txt1" in p.command for p in rec.kill.left_running), rec.kill.left_running


def test_conftest_cannot_be_planted_in_the_tests(hostile):
    rec = _rec(hostile, "conftest-planted")
    _scored(rec)
    trial = _trial(hostile, rec)
    assert "Read-only file system" in (trial / "agent" / "attempt.log").read_text()
    assert (trial / "verifier" / "listing.txt").read_text().split() == ["test.sh"]


def test_rename_loop_during_test_sh_scores_zero_flagged(hostile):
    """The loop renames a 1 onto reward.txt while test.sh runs, which the judge's watch counts. On a
    loaded machine it can also win against the judge's preparation (a file renamed into
    /logs/verifier while the judge empties it, so the fresh directory cannot be made): test.sh
    then never runs. Either way the agent made the reward unreadable: 0, flagged, never invalid."""
    rec = _rec(hostile, "rename-loop")
    _scored(rec)
    reason = rec.validity.reason
    assert "broke-container" in _kinds(rec), rec.flags
    assert "renamed" in reason or "/logs/verifier could not be created" in reason, rec.validity


def test_replaced_pytest_is_detected_not_prevented(hostile):
    rec = _rec(hostile, "pytest-replaced")
    _scored(rec, 1.0)  # test.sh's own toolchain is the task's: tbflow cannot protect it, it shows it
    (flag,) = [f for f in rec.flags if f.kind == "toolchain-changed"]
    assert "added /usr/local/bin/pytest" in flag.message
    assert "added /usr/local/bin/pytest" in (_trial(hostile, rec) / flag.evidence).read_text()


def test_seven_megabytes_of_leftover_command_lines_hang_nothing(hostile):
    rec = _rec(hostile, "huge-command-lines")
    _scored(rec)
    assert len(rec.kill.left_running) >= 100
    assert max(len(p.command) for p in rec.kill.left_running) <= 1100


def test_fifo_in_place_of_dev_null_is_repaired_and_flagged(hostile):
    rec = _rec(hostile, "fifo-dev-null")
    _scored(rec)
    assert any("/dev/null was replaced by a fifo" in f.message for f in rec.flags if f.kind == "tampering"), rec.flags
    assert not rec.verifier.timed_out


def test_judge_killed_by_the_agent_scores_zero_flagged(hostile):
    rec = _rec(hostile, "judge-killed")
    _scored(rec)
    assert "was killed (exit 137)" in rec.validity.reason, rec.validity


def test_test_sh_killed_after_the_agent_wrote_a_reward_scores_zero_flagged(hostile):
    """Before: reward 1 with only agent-processes (test.sh never got to write its 0)."""
    rec = _rec(hostile, "test-sh-killed-after-a-forged-reward")
    _scored(rec)
    assert "test.sh was killed (SIGKILL)" in rec.validity.reason, rec.validity


def test_judge_stopped_by_the_agent_ends_at_the_deadline_scored_zero(hostile):
    rec = _rec(hostile, "judge-stopped")
    _scored(rec)
    assert "did not finish" in rec.validity.reason, rec.validity


def test_reward_turned_into_a_fifo_during_test_sh_scores_zero_not_invalid(hostile):
    rec = _rec(hostile, "reward-fifo-during-test")
    _scored(rec)
    assert "broke-container" in _kinds(rec), rec.flags


def test_reward_appended_after_test_sh_exited_keeps_test_sh_reward(hostile):
    rec = _rec(hostile, "append-after-exit")
    _scored(rec)
    assert "reward.txt changed after test.sh exited" in [f.message for f in rec.flags if f.kind == "tampering"]
    assert (_trial(hostile, rec) / "verifier" / "reward.txt").read_text() == "0\n"


def test_reward_turned_into_a_directory_after_test_sh_is_tampering_not_an_error(hostile):
    rec = _rec(hostile, "reward-dir-after-exit")
    _scored(rec)
    assert "reward.txt changed after test.sh exited" in [f.message for f in rec.flags if f.kind == "tampering"]
    trial = _trial(hostile, rec)
    assert (trial / "verifier" / "reward.txt").read_text() == "0\n"
    assert (trial / "verifier" / "changed-after-test-sh" / "reward.txt").is_dir()


def test_workdir_replaced_by_a_file_is_recreated(hostile):
    rec = _rec(hostile, "workdir-replaced-by-file")
    _scored(rec, 1.0)
    assert "the workdir /app was replaced by a non-directory; tbflow recreated it" in [f.message for f in rec.flags]


def test_reward_symlink_planted_before_the_verifier_is_removed_and_flagged(hostile):
    rec = _rec(hostile, "reward-symlink-before")
    _scored(rec)
    assert any("a symlink named reward.txt was there before the verifier started" in f.message for f in rec.flags)


def test_decoy_files_where_tbflow_once_kept_its_state_change_nothing(hostile):
    rec = _rec(hostile, "decoy-run-files")
    _scored(rec)
    assert "broke-container" not in _kinds(rec)


def test_fifo_with_a_non_utf8_name_in_the_agent_logs_still_gives_a_record(hostile):
    rec = _rec(hostile, "non-utf8-fifo-in-logs")
    _scored(rec)
    assert any("bad\\xffname" in s.path for s in rec.logs.skipped), rec.logs.skipped
    json.loads((_trial(hostile, rec) / "trial.json").read_text())


def test_judge_on_its_read_only_volume_cannot_be_overwritten(hostile):
    rec = _rec(hostile, "judge-overwritten")
    _scored(rec)
    assert "Read-only file system" in (_trial(hostile, rec) / "agent" / "attempt.log").read_text()


def test_sh_removed_then_cut_off_is_still_killed_and_verified(hostile):
    rec = _rec(hostile, "sh-removed-then-cut-off")
    _scored(rec)
    assert rec.agent.timed_out and rec.kill.cut_off and rec.kill.problem is None
    assert any("sleep 600" in p.command for p in rec.kill.killed), rec.kill.killed


def test_agent_exhausting_the_pids_limit_is_scored_zero_not_invalid(run_job, tmp_path, monkeypatch):
    monkeypatch.setenv("TBFLOW_PIDS_LIMIT", "64")
    make_task(tmp_path / "ds", "fork-bomb", solve="for i in $(seq 100); do setsid sleep 600 </dev/null >/dev/null 2>&1 & done\n"
                                                   "true\n", test_sh=WRITES_0_TEXT)
    rec = record_of(run_job(tmp_path / "ds", env_retries=0), "fork-bomb")
    _scored(rec)
    assert "broke-container" in _kinds(rec), rec.flags


WRITES_0_TEXT = "#!/bin/bash\necho 0 > /logs/verifier/reward.txt\n"
