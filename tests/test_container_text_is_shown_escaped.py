"""Issue 27, item 5: text from the container reached the operator's terminal raw (an ``ESC]52``
in a leftover command line writes the clipboard, ``ESC[2J`` clears the screen, ``ESC]8`` hides a
link, a bidi override reverses what a line seems to say), and report.md and junit.xml silently
dropped it instead. Every output now shows it as visible escapes (``\\x1b]52;...``), the same way,
and none of it acts: not on a terminal, not as Markdown or HTML, not as Rich markup.

Job directories are built from records (no Docker): a flag message carrying a process's command
line, an invalid trial's reason, a tampering flag naming a file, a verifier log in colour.
"""

from __future__ import annotations

import html
import xml.etree.ElementTree as ET
from types import SimpleNamespace

import pytest
import typer
from markdown_it import MarkdownIt
from report_fixtures import make_job, make_trial, trial_id, write_job_dir
from typer.testing import CliRunner

from flows.cli.console import print_results
from flows.cli.report_cli import register
from flows.job.progress import LogListener, describe
from tasks_lib.records.record_models import TrialFlag, TrialRecord
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.report_files import write_reports
from tasks_lib.report.results_build import load_results
from tasks_lib.text_clean import visible

OSC52 = "\x1b]52;c;ZXZpbA==\x07"  # write "evil" to the clipboard
CLEAR = "\x1b[2J"
OSC8 = "\x1b]8;;https://evil.example/\x1b\\click\x1b]8;;\x1b\\"
RLO = "\u202e"
COMMAND = f"sleep 999 # {OSC52}{CLEAR}{RLO}txt.exe"
PROCESSES = f"1 process(es) the agent left ran next to test.sh: {COMMAND}"
LRI = "\u2066"
NUL = "\x00"
MARKUP = "<img src=x onerror=alert(1)> [x](javascript:alert(1)) a|b [/]"
REASON = f"no reward file written: {OSC8} {CLEAR}\x9b31m\x7f {MARKUP}\n# pwned"
FILE_FLAG = f"reward file changed outside test.sh: /logs/verifier/{RLO}gnp.sh{LRI} \x00"

#: what each hostile piece must look like wherever it is shown
SHOWN = {OSC52: "\\x1b]52;c;ZXZpbA==\\x07", CLEAR: "\\x1b[2J", OSC8: "\\x1b]8;;https://evil.example/\\x1b\\click",
         RLO: "\\u202e", "\x9b": "\\x9b31m\\x7f", LRI: "\\u2066", NUL: "\\x00"}
RAW = ("\x1b", "\x07", "\x9b", "\x7f", RLO, LRI, "\x00")


def _records() -> list[TrialRecord]:
    left = make_trial("svc", "codex")
    left.flags = [TrialFlag(kind="agent-processes", message=PROCESSES)]
    bad = make_trial("bad", "codex", invalid="verifier", reason=REASON)
    tamper = make_trial("tamper", "codex", reward=0.0)
    tamper.flags = [TrialFlag(kind="tampering", message=FILE_FLAG, evidence="verifier/tampering.txt")]
    return [left, bad, tamper]


@pytest.fixture
def job_dir(tmp_path):
    records = _records()
    colour = "collecting\n\x1b[31mFAILED\x1b[0m test_x - assert 0\n" + OSC52 + "\n"
    logs = {trial_id("tamper", "codex", 1): {"verifier/test-stdout.txt": colour}}
    return write_job_dir(tmp_path, make_job(records), records, logs=logs)


def _no_raw(text: str) -> None:
    found = [hex(ord(c)) for c in RAW if c in text]
    assert not found, f"raw control or bidi characters reached the output: {found}"


def test_records_keep_the_escape_sequences_as_evidence():
    """Escaping happens where text is shown: a record keeps what the container said, and loads."""
    flag = TrialFlag(kind="agent-processes", message=PROCESSES)
    assert TrialFlag.model_validate_json(flag.model_dump_json()).message == PROCESSES
    assert TrialFlag(kind="tampering", message="x\ud800").message == "x\\ud800"  # was a lost record


def test_visible_escapes_every_acting_character_and_is_idempotent():
    assert visible(COMMAND) == "sleep 999 # \\x1b]52;c;ZXZpbA==\\x07\\x1b[2J\\u202etxt.exe"
    assert visible("a\n\tb\r") == "a\\n\\tb\\r"
    assert visible("a\n\tb\r", multiline=True) == "a\n\tb\\r"
    assert visible("bad\udcff \ufffe \x85") == "bad\\udcff \\ufffe \\x85"
    assert visible(visible(REASON)) == visible(REASON)


def test_every_character_shown_visibly_is_legal_xml():
    text = "".join(map(chr, range(0x10000))) + "\U0001f600\U0010ffff"
    node = ET.Element("failure", message=visible(text, multiline=True))
    node.text = visible(text, multiline=True)
    parsed = ET.fromstring(ET.tostring(node, encoding="unicode"))
    assert "\\x1b" in parsed.text and "\\u202e" in parsed.get("message")


def test_terminal_progress_line_shows_escapes_on_one_line():
    for record in _records():
        line = describe(record)
        _no_raw(line)
        assert "\n" not in line and "\r" not in line
    left, bad, tamper = (describe(r) for r in _records())
    assert f"[flagged: agent-processes: 1 process(es) the agent left ran next to test.sh: sleep 999 # " \
           f"{SHOWN[OSC52]}{SHOWN[CLEAR]}{SHOWN[RLO]}txt.exe]" in left
    assert SHOWN[OSC8] in bad and "[/]\\n# pwned)" in bad
    assert SHOWN[LRI] in tamper and SHOWN[NUL] in tamper


def test_run_log_line_shows_escapes(caplog):
    import logging

    logger = logging.getLogger("tbflow-test-escaped")
    with caplog.at_level(logging.INFO, logger=logger.name):
        LogListener(logger).trial_finished(_records()[0], 1, 3)
        LogListener(logger).trial_interrupted("x__codex__1", f"Crashed: {CLEAR}")
    _no_raw(caplog.text)
    assert SHOWN[OSC52] in caplog.text and f"not recorded (Crashed: {SHOWN[CLEAR]})" in caplog.text


def test_terminal_summary_table_shows_escapes_and_no_markup(capsys, monkeypatch):
    """``tbflow run``'s closing table: a reason holding ``[/]`` used to be read as Rich markup."""
    monkeypatch.setenv("COLUMNS", "400")
    result = SimpleNamespace(records=_records(), job_name="demo-job", unfinished=[], job_dir="/jobs/demo-job",
                             location=None, task_problems=[SimpleNamespace(name=f"t{CLEAR}", where="task.toml",
                                                                           message=f"[/] bad {OSC52}")],
                             task_notes=[SimpleNamespace(name="t", where="task.toml", message=f"k{CLEAR}: unknown")])
    print_results(result)
    out = capsys.readouterr().out
    _no_raw(out)
    assert SHOWN[CLEAR] in out and SHOWN[OSC8] in out and f"{MARKUP}\\n…" in out  # cut at 160 characters
    assert f"task not loaded t{SHOWN[CLEAR]}: task.toml: [/] bad {SHOWN[OSC52]}" in out
    assert f"task note t: k{SHOWN[CLEAR]}: unknown" in out  # a key name is the task author's text


def test_tbflow_report_prints_no_raw_escape_in_any_format(job_dir):
    app = typer.Typer()
    register(app)
    for args in ([], ["--format", "md"], ["--format", "junit"], ["--format", "json"]):
        result = CliRunner().invoke(app, ["report", str(job_dir), *args])
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output, args


def test_report_md_shows_container_text_literally(job_dir):
    out = render_markdown(load_results(job_dir))
    _no_raw(out)
    assert not [line for line in out.splitlines() if line.startswith("# pwned")]
    rows = [line for line in out.splitlines() if line.startswith("| codex | bad | 1 | verifier |")]
    assert len(rows) == 1 and len(rows[0].replace("\\|", "").split("|")) - 2 == 6  # no stray column
    page = MarkdownIt("commonmark").enable("table").render(out)
    assert "<img" not in page and "javascript:" not in page.split("href=")[-1].split(">")[0]
    assert 'href="javascript' not in page and "<a " not in page
    shown = html.unescape(page)
    for piece in (OSC52, CLEAR, OSC8, RLO, LRI):
        assert SHOWN[piece] in shown, piece
    assert f"{MARKUP} ↵ # pwned" in shown


def test_junit_shows_container_text_as_visible_escapes(job_dir):
    paths = write_reports(job_dir)
    raw = paths.junit.read_text(encoding="utf-8")
    _no_raw(raw)
    root = ET.parse(paths.junit).getroot()
    cases = {c.get("name"): c for c in root.iter("testcase")}
    processes = cases["svc [attempt 1]"].find("properties/property[@name='agent-processes']").get("value")
    assert f"sleep 999 # {SHOWN[OSC52]}{SHOWN[CLEAR]}{SHOWN[RLO]}txt.exe" in processes
    error = cases["bad [attempt 1]"].find("error")
    assert SHOWN[OSC8] in error.get("message") and SHOWN[OSC8] in error.text
    assert "[/]\n# pwned" in error.text  # XML carries line breaks; only acting characters are escaped
    tampering = cases["tamper [attempt 1]"].find("properties/property[@name='tampering']").get("value")
    assert f"{SHOWN[RLO]}gnp.sh{SHOWN[LRI]} {SHOWN[NUL]}" in tampering
    failure = cases["tamper [attempt 1]"].find("failure").text
    assert "\\x1b[31mFAILED\\x1b[0m test_x - assert 0" in failure and SHOWN[OSC52] in failure
