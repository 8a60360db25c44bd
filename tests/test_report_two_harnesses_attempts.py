"""Two harnesses with several attempts: per-harness summaries, pass@k, attempts as columns."""

import xml.etree.ElementTree as ET

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.report.render_junit import render_junit
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_build import load_results
from tasks_lib.report.stats import pass_at_k


def _job(tmp_path):
    trials = []
    # oracle: everything passes
    for task in ("alpha", "beta", "gamma"):
        trials += [make_trial(task, "oracle", a) for a in (1, 2, 3)]
    # codex: alpha 3/3, beta 1/3, gamma 0/2 scored + 1 invalid
    trials += [make_trial("alpha", "codex", a) for a in (1, 2, 3)]
    trials += [make_trial("beta", "codex", 1), make_trial("beta", "codex", 2, reward=0.0),
               make_trial("beta", "codex", 3, reward=0.0)]
    trials += [make_trial("gamma", "codex", 1, reward=0.0), make_trial("gamma", "codex", 2, invalid="environment"),
               make_trial("gamma", "codex", 3, reward=0.0)]
    job = make_job(trials, harnesses=["oracle", "codex"], attempts=3, model="anthropic/claude-x")
    return write_job_dir(tmp_path, job, trials)


def test_two_harnesses_pass_at_k_and_attempt_columns(tmp_path):
    results = load_results(_job(tmp_path))
    oracle, codex = results.summaries
    assert [oracle.harness, codex.harness] == ["oracle", "codex"]
    assert (oracle.trials, oracle.scored, oracle.mean_reward) == (9, 9, 1.0)
    assert (codex.trials, codex.scored, codex.invalid, codex.passed) == (9, 8, 1, 4)
    assert codex.mean_reward == 0.5

    p = {x.k: x for x in codex.pass_at_k}
    assert sorted(p) == [1, 3]
    # pass@1 = mean over tasks of c/n: (3/3 + 1/3 + 0/2) / 3
    assert abs(p[1].value - (1 + 1 / 3 + 0) / 3) < 1e-12 and p[1].tasks == 3
    # pass@3 needs 3 scored attempts: gamma (2 scored) is left out, not padded with a 0
    assert abs(p[3].value - (pass_at_k(3, 3, 3) + pass_at_k(3, 1, 3)) / 2) < 1e-12
    assert (p[3].tasks, p[3].tasks_short) == (2, 1)
    assert codex.reward_interval.method.startswith("Wilson score, clustered by task")

    md = render_markdown(results)
    assert "| Harness | Trials | Scored | Invalid |" in md and "pass@1 | pass@3 |" in md
    assert "### oracle" in md and "### codex" in md
    assert "| Task | Attempt 1 | Attempt 2 | Attempt 3 | Scored | Invalid | Mean |" in md
    assert "| gamma | ❌ 0 | ⚠️ environment | ❌ 0 | 2 | 1 | 0.00 |" in md
    assert "| beta | ✅ 1 | ❌ 0 | ❌ 0 | 3 | 0 | 0.33 |" in md
    assert "codex: pass@3 averages 2 task(s); 1 task(s) with fewer than 3 scored attempts are left out." in md

    root = ET.fromstring(render_junit(results))
    suites = root.findall("testsuite")
    assert [s.get("name") for s in suites] == ["oracle", "codex"]
    assert [(s.get("tests"), s.get("failures"), s.get("errors")) for s in suites] == [("9", "0", "0"), ("9", "4", "1")]
    names = [c.get("name") for c in suites[1].findall("testcase")]
    assert names[:3] == ["alpha [attempt 1]", "alpha [attempt 2]", "alpha [attempt 3]"]
    assert {c.get("classname") for c in suites[1].findall("testcase")} == {"codex"}
