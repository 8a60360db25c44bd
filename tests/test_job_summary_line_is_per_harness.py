"""Issue 31: a job's last line averaged every harness together (``oracle`` 1.0 + ``nop`` 0.0 read
"mean reward over scored: 0.500", a number about neither). Each harness now gets its own line, as
the report gives each its own summary; invalid trials stay out of every mean.

Records are built in Python (no Docker): the rule is about what is printed from them.
"""

from __future__ import annotations

from types import SimpleNamespace

from report_fixtures import make_trial

from flows.cli.console import print_results
from flows.cli.result_lines import summary_lines


def _records():
    return [make_trial("a", "oracle"), make_trial("b", "oracle"),
            make_trial("a", "nop", reward=0.0), make_trial("b", "nop", invalid="verifier")]


def test_each_harness_has_its_own_mean():
    lines = summary_lines(_records())
    assert lines == [
        "oracle: scored: 2   invalid: 0 (none)   mean reward over scored: 1.000",
        "nop: scored: 1   invalid: 1 (verifier 1)   mean reward over scored: 0.000",
    ]


def test_a_harness_with_no_scored_trial_says_so_instead_of_a_number():
    (line,) = summary_lines([make_trial("a", "nop", invalid="verifier")])
    assert line.endswith("mean reward over scored: n/a (no scored trials)")


def test_printed_results_never_show_a_mean_over_both_harnesses(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    result = SimpleNamespace(job_name="j", records=_records(), task_problems=[], task_notes=[], unfinished=[], job_dir="/x",
                             location=None)
    print_results(result)
    out = capsys.readouterr().out
    assert "oracle: scored: 2" in out and "mean reward over scored: 1.000" in out
    assert "nop: scored: 1" in out and "mean reward over scored: 0.000" in out
    assert "0.500" not in out and "0.667" not in out  # neither the mean of trials nor of the two means
