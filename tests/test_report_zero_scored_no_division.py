"""No scored trial (or no trial at all): no division by zero, and the report says so."""

import xml.etree.ElementTree as ET

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.records.record_models import TaskProblemRecord
from tasks_lib.report.render_junit import render_junit
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.report_files import write_reports
from tasks_lib.report.results_build import load_results


def test_all_invalid_job_has_no_mean_and_says_why(tmp_path):
    trials = [make_trial("a", "codex", a, invalid="harness") for a in (1, 2)]
    trials += [make_trial("b", "codex", a, invalid="environment") for a in (1, 2)]
    job_dir = write_job_dir(tmp_path, make_job(trials, attempts=2), trials)

    paths = write_reports(job_dir)  # must not raise ZeroDivisionError anywhere
    (s,) = paths.results.summaries
    assert s.scored == 0 and s.invalid == 4
    assert s.mean_reward is None and s.reward_interval is None
    assert [(p.k, p.value, p.tasks, p.tasks_short) for p in s.pass_at_k] == [(1, None, 0, 0), (2, None, 0, 0)]

    md = paths.markdown.read_text(encoding="utf-8")
    assert "- **codex**: **no scored trial**, so no mean reward; 4 invalid (2 harness, 2 environment)" in md
    assert "**codex: no scored trial.** All 4 of its trials are invalid, so it has no mean reward and no pass@k." in md
    assert "| codex | 4 | 0 | 4 | 2 | 2 | 0 | n/a | n/a | n/a | n/a |" in md

    suite = ET.parse(paths.junit).getroot().find("testsuite")
    assert (suite.get("tests"), suite.get("failures"), suite.get("errors")) == ("4", "0", "4")


def test_job_with_no_trial_at_all(tmp_path):
    problems = [TaskProblemRecord(name="t1", where="tasks/t1/task.toml", message="missing [verifier]")]
    job = make_job([], harnesses=["oracle"], task_problems=problems)
    job_dir = write_job_dir(tmp_path, job, [])
    results = load_results(job_dir)
    (s,) = results.summaries
    assert (s.trials, s.scored, s.mean_reward, s.tasks) == (0, 0, None, 0)

    md = render_markdown(results)
    assert "- **oracle**: no trial recorded" in md
    assert "- **No trial was recorded**; 1 task(s) could not be loaded (see below)." in md
    assert "No task was run with this harness." in md

    root = ET.fromstring(render_junit(results))
    suites = {s.get("name"): s for s in root.findall("testsuite")}
    assert suites["oracle"].get("tests") == "0"
    assert suites["task-loading"].get("errors") == "1"
    assert root.get("tests") == "1" and root.get("errors") == "1"
