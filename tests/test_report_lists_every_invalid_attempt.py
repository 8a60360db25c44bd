"""Every invalid attempt is listed with its kind, reason and the job-relative path of its proof."""

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.records.record_models import TaskProblemRecord
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_build import load_results


def test_each_invalid_kind_listed_with_reason_and_evidence(tmp_path):
    trials = [
        make_trial("ok", "codex"),
        make_trial("auth", "codex", invalid="harness"),
        make_trial("build", "codex", invalid="environment", reason="docker build failed: exit 100"),
        make_trial("noreward", "codex", invalid="verifier", reason="reward.txt is empty"),
        make_trial("cancel", "codex", invalid="interrupted", reason="cancelled by the user"),
    ]
    problems = [TaskProblemRecord(name="broken", where="tasks/broken/task.toml [agent] timeout_sec",
                                  message="must be greater than 0")]
    job = make_job(trials, extra_trial_ids=["late__codex__1"], task_problems=problems)
    job_dir = write_job_dir(tmp_path, job, trials)
    (job_dir / "trials" / "garbled").mkdir()
    (job_dir / "trials" / "garbled" / "trial.json").write_text('{"schema_version": 1}')

    results = load_results(job_dir)
    md = render_markdown(results)

    rows = {
        "auth": "| codex | auth | 1 | harness | harness never reached the model (0 tokens in its event log; "
                "it exited 0) | `trials/auth__codex__1/agent/stderr.txt` |",
        # trial-relative "../../builds/build.log" shown relative to the job dir
        "build": "| codex | build | 1 | environment | build-image: docker build failed: exit 100 | "
                 "`builds/build.log` |",
        "noreward": "| codex | noreward | 1 | verifier | reward.txt is empty | "
                    "`trials/noreward__codex__1/verifier/test-stdout.txt` |",
        "cancel": "| codex | cancel | 1 | interrupted | cancelled by the user | "
                  "`trials/cancel__codex__1/agent/stderr.txt` |",
    }
    for task, row in rows.items():
        assert row in md, task
    assert "## Invalid attempts (4)" in md
    # the interrupted kind gets its own summary column when present
    assert "↳ interrupted |" in md
    (s,) = results.summaries
    assert s.invalid_by_kind.interrupted == 1 and s.invalid == 4 and s.scored == 1

    assert "## Tasks that could not be loaded (1)" in md
    assert "| broken | `tasks/broken/task.toml [agent] timeout_sec` | must be greater than 0 |" in md
    assert "## Trials without a record (1)" in md and "- `late__codex__1`" in md
    assert "## Unreadable trial records (1)" in md and "`trials/garbled/trial.json`" in md
    assert [u.path for u in results.unreadable_records] == ["trials/garbled/trial.json"]


def test_evidence_tail_is_kept_for_invalid_trials(tmp_path):
    trials = [make_trial("auth", "codex", invalid="harness")]
    job_dir = write_job_dir(tmp_path, make_job(trials), trials)
    (t,) = load_results(job_dir).trials
    assert t.evidence_path == "trials/auth__codex__1/agent/stderr.txt"
    assert t.evidence_tail == ["agent stderr", "HTTP 401 Unauthorized"]
