"""junit.xml parses in an independent JUnit parser, with hostile log text, and its counts add up."""

import xml.etree.ElementTree as ET

import junitparser
from report_fixtures import make_job, make_trial, trial_id, write_job_dir

from tasks_lib.records.record_models import TaskProblemRecord
from tasks_lib.report.report_files import write_reports

HOSTILE = "assert '<a & b>' == \"]]>\" \x00\x08\x0b\x1b[1mbold\x1b[0m ünï ✓"


def _job(tmp_path):
    trials = [
        make_trial("pass", "codex", 1, duration=3.25),
        make_trial("fail", "codex", 1, reward=0.0, duration=7.5),
        make_trial("half", "codex", 1, reward=0.5),
        make_trial("nope", "codex", 1, invalid="verifier", reason="reward.txt <empty> & \x07bell"),
        make_trial("env", "oracle", 1, invalid="environment"),
        make_trial("pass", "oracle", 1),
    ]
    job = make_job(trials, harnesses=["codex", "oracle"], extra_trial_ids=["lost__codex__1"],
                   task_problems=[TaskProblemRecord(name="bad<task>", where="tasks/bad/task.toml",
                                                    message="schema_version & <stuff>")])
    logs = {trial_id("fail", "codex", 1): {"verifier/test-stdout.txt": "line 1\n" + HOSTILE + "\nlast line ✗\n"},
            trial_id("nope", "codex", 1): {"verifier/test-stdout.txt": "no reward <file> & done\n"}}
    job_dir = write_job_dir(tmp_path, job, trials, logs=logs)
    log = job_dir / "trials" / trial_id("fail", "codex", 1) / "verifier/test-stdout.txt"
    log.write_bytes(b"not utf-8: \xff\xfe\n" + log.read_bytes())  # undecodable bytes must not break XML
    return job_dir


def test_junit_parses_and_escapes_hostile_logs(tmp_path):
    paths = write_reports(_job(tmp_path))
    raw = paths.junit.read_text(encoding="utf-8")
    assert "\x00" not in raw and "\x1b" not in raw and "\x08" not in raw

    xml = junitparser.JUnitXml.fromfile(str(paths.junit))
    suites = {s.name: s for s in xml}
    assert set(suites) == {"codex", "oracle", "task-loading", "not-recorded"}

    codex = suites["codex"]
    assert (codex.tests, codex.failures, codex.errors, codex.skipped) == (4, 2, 1, 0)
    cases = {c.name: c for c in codex}
    assert set(cases) == {"pass [attempt 1]", "fail [attempt 1]", "half [attempt 1]", "nope [attempt 1]"}
    assert all(c.classname == "codex" for c in cases.values())
    assert cases["pass [attempt 1]"].time == 3.25 and cases["pass [attempt 1]"].is_passed

    (failure,) = cases["fail [attempt 1]"].result
    assert isinstance(failure, junitparser.Failure)
    assert failure.message == "reward 0 (< 1)" and failure.type == "reward"
    assert "assert '<a & b>' == \"]]>\"" in failure.text  # escaped in the file, intact once parsed
    assert "\\x00\\x08\\x0b\\x1b[1mbold\\x1b[0m ünï ✓" in failure.text  # shown, not dropped
    assert failure.text.rstrip().endswith("last line ✗") and "not utf-8: \ufffd\ufffd" in failure.text
    assert "verifier output: trials/fail__codex__1/verifier/test-stdout.txt" in failure.text

    (half,) = cases["half [attempt 1]"].result
    assert isinstance(half, junitparser.Failure) and half.message == "reward 0.5 (< 1)"

    (error,) = cases["nope [attempt 1]"].result
    assert isinstance(error, junitparser.Error)
    assert error.type == "verifier"
    assert error.message == "invalid (verifier): reward.txt <empty> & \\x07bell"
    assert "evidence: trials/nope__codex__1/verifier/test-stdout.txt" in error.text
    assert "no reward <file> & done" in error.text

    oracle = suites["oracle"]
    (env_error,) = [c for c in oracle if c.name == "env [attempt 1]"][0].result
    assert env_error.type == "environment" and "E: Unable to locate package foo" in env_error.text

    loading = suites["task-loading"]
    assert (loading.tests, loading.errors) == (1, 1)
    (problem,) = list(loading)
    assert problem.name == "bad<task>" and problem.result[0].message == "schema_version & <stuff>"
    assert (suites["not-recorded"].tests, suites["not-recorded"].skipped) == (1, 1)


def test_suite_counts_add_up(tmp_path):
    paths = write_reports(_job(tmp_path))
    root = ET.parse(paths.junit).getroot()
    total = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in root.findall("testsuite"):
        cases = suite.findall("testcase")
        counts = {"tests": len(cases),
                  "failures": sum(c.find("failure") is not None for c in cases),
                  "errors": sum(c.find("error") is not None for c in cases),
                  "skipped": sum(c.find("skipped") is not None for c in cases)}
        assert {k: int(suite.get(k)) for k in counts} == counts
        passed = counts["tests"] - counts["failures"] - counts["errors"] - counts["skipped"]
        assert passed >= 0
        assert abs(float(suite.get("time")) - sum(float(c.get("time")) for c in cases)) < 1e-6
        for k in total:
            total[k] += counts[k]
    assert {k: int(root.get(k)) for k in total} == total
    # results agree: one testcase per recorded trial in the harness suites
    harness_cases = sum(len(s.findall("testcase")) for s in root.findall("testsuite")
                        if s.get("name") in ("codex", "oracle"))
    assert harness_cases == paths.results.total_trials == 6
