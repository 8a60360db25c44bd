"""Issue 31: at 80 columns the results table split task names mid-word (every column folded to
make room for a long reason) and a long reason ran on without showing it was cut. Only the reason
column gives way now; a long reason is cut with an ellipsis.
"""

from __future__ import annotations

from types import SimpleNamespace

from report_fixtures import make_trial

from flows.cli.console import REASON_CHARS, print_results

LONG_TASK = "build-cython-extension-for-numpy"
LONG_REASON = "no reward file written: " + " ".join(f"/logs/verifier/path-number-{i}.txt" for i in range(20))


def _printed(capsys, monkeypatch, records) -> str:
    monkeypatch.setenv("COLUMNS", "80")
    print_results(SimpleNamespace(job_name="j", records=records, task_problems=[], task_notes=[], unfinished=[], job_dir="/x",
                                  location=None))
    return capsys.readouterr().out


def test_task_and_harness_names_are_never_split(capsys, monkeypatch):
    out = _printed(capsys, monkeypatch, [make_trial(LONG_TASK, "claude-code", invalid="verifier",
                                                    reason=LONG_REASON),
                                         make_trial("short", "oracle")])
    assert max(len(line) for line in out.splitlines()) <= 80
    assert LONG_TASK in out, out
    assert "claude-code" in out, out


def test_a_cut_reason_ends_with_an_ellipsis(capsys, monkeypatch):
    out = _printed(capsys, monkeypatch, [make_trial("t", "oracle", invalid="verifier", reason=LONG_REASON)])
    cells = "".join(line.split("│")[5].strip() for line in out.splitlines() if line.count("│") == 7)
    assert cells.endswith("…"), cells
    assert len(cells) <= REASON_CHARS + len("verifier: ")
