"""A file name is the agent's: any bytes but ``/`` and NUL. ``runner-files.txt`` stored the names
of planted runner files with their raw ESC, BEL, CR and newline bytes (issue 38): ``cat`` of the
evidence acted on them (``ESC]52`` writes the operator's clipboard, ``ESC[2J`` clears the screen)
and a newline in a name forged a line of its own. Every name tbflow writes to an evidence file
(``runner-files.txt``, ``verifier/tampering.txt``, ``verifier/broken-container.txt``,
``storage.txt``) or puts in a flag's message is stored as ``text_clean`` shows it: escapes, on one
line. Without Docker: the writable layer is a plain directory here, as overlay2's is on the host."""

from __future__ import annotations

import os
import re
from pathlib import Path

from tasks_lib.container.layer_usage import LayerUsage
from tasks_lib.trial.container_health import BROKEN_EVIDENCE, write_broke_evidence
from tasks_lib.judge.judge_report import JudgeReport, ReportedFile, StuckProcess
from tasks_lib.judge.runner_use import EVIDENCE, runner_evidence, watch_runner, write_runner_evidence
from tasks_lib.trial.storage_watch import EVIDENCE as STORAGE_EVIDENCE
from tasks_lib.trial.storage_watch import StorageWatch
from tasks_lib.judge.tampering import EVIDENCE as TAMPERING_EVIDENCE
from tasks_lib.judge.tampering import check_tampering
from tasks_lib.judge.verdict_table import VerifierEvidence, runner_flags

#: ESC]52 (clipboard), ESC[2J (clear), BEL, CR, a newline that forges a line, a bidi override, DEL
HOSTILE = "\x1b]52;c;cHduZWQ=\x07\x1b[2J\rx\nadded /usr/bin/python3 [forged]\u202e\x7f"
#: what must never be in an evidence file: C0 controls but newline, DEL, C1, bidi overrides
RAW = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def _clean(text: str, lines: int | None = None) -> None:
    assert not RAW.search(text), repr(text)
    assert "\\x1b]52" in text and "\\x1b[2J" in text and "\\u202e" in text, repr(text)
    if lines is not None:
        assert text.count("\n") == lines, text


def _plant(upper: Path, path: str, data: bytes = b"x = 1\n") -> None:
    host = Path(os.fsdecode(os.fsencode(str(upper)) + os.fsencode(path)))
    host.parent.mkdir(parents=True, exist_ok=True)
    host.write_bytes(data)


def test_runner_files_txt_stores_planted_names_escaped(tmp_path):
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    lower.mkdir()
    _plant(upper, f"/app/{HOSTILE}/conftest.py")
    _plant(upper, f"/app/{HOSTILE}\udcff/pytest.ini", b"[pytest]\naddopts = -p evil\n")  # an undecodable byte too
    inspect = {"GraphDriver": {"Name": "overlay2", "Data": {"UpperDir": str(upper), "LowerDir": str(lower)}},
               "Config": {"Env": ["PATH=/usr/local/bin:/usr/bin:/bin", "HOME=/root"]}}
    ev = runner_evidence(watch_runner("c", inspect), agent_wrote=None)
    assert len(ev.files) == 2
    for f in ev.files:  # the record keeps the name as evidence files show it
        _clean(f.path)
    assert any("\\xff" in f.path for f in ev.files)
    assert write_runner_evidence(ev, tmp_path) == EVIDENCE
    text = (tmp_path / EVIDENCE).read_text(encoding="utf-8")
    _clean(text, lines=5)  # the header (3 lines) and one line per file: nothing forged
    for _, message in runner_flags(ev):
        _clean(message)


def test_runner_files_txt_note_of_an_unreadable_path_is_escaped(tmp_path):
    upper, lower = tmp_path / "upper", tmp_path / "lower"
    lower.mkdir()
    _plant(upper, f"/app/{HOSTILE}/f")
    os.chmod(upper / "app" / HOSTILE, 0)  # read as root it is still listed: make its open fail instead
    inspect = {"GraphDriver": {"Name": "overlay2", "Data": {"UpperDir": str(upper), "LowerDir": str(lower)}},
               "Config": {"Env": ["PATH=/usr/bin"]}}
    w = watch_runner("c", inspect)
    w.scan.problem = f"/app/{HOSTILE} could not be read in the writable layer"  # as walk_upper's on_error says
    ev = runner_evidence(w, agent_wrote=None)
    write_runner_evidence(ev, tmp_path)
    _clean((tmp_path / EVIDENCE).read_text(encoding="utf-8"))


def test_tampering_txt_stores_prewritten_names_escaped(tmp_path):
    report = JudgeReport(prewritten={f"reward.{HOSTILE}": ReportedFile(size=2, data=b"1\n")},
                         pre_types={f"reward.{HOSTILE}x": "fifo"},
                         notes=[f"the workdir /app/{HOSTILE} was removed; tbflow recreated it"])
    flags = check_tampering(report, tmp_path, verifier_downloaded=True, complete=False)
    assert len(flags) == 3
    for f in flags:
        _clean(f.message)
    _clean((tmp_path / TAMPERING_EVIDENCE).read_text(encoding="utf-8"), lines=2 + 3 * 2)


def test_broken_container_txt_stores_names_escaped(tmp_path):
    ev = VerifierEvidence(timeout_sec=1, grace_sec=1, report=JudgeReport(
        stuck=[StuckProcess(pid=7, state="S", wchan="pipe_read", exe=f"/app/{HOSTILE}",
                            fifo_paths=[f"/app/{HOSTILE}.fifo"])]))
    ev.runner.deleted_system = [f"/usr/bin/{HOSTILE}"]
    assert write_broke_evidence("verifier-blocked", ev, tmp_path) == BROKEN_EVIDENCE
    _clean((tmp_path / BROKEN_EVIDENCE).read_text(encoding="utf-8"))
    write_broke_evidence("system-files-deleted", ev, tmp_path)
    _clean((tmp_path / BROKEN_EVIDENCE).read_text(encoding="utf-8"), lines=2)


def test_storage_txt_stores_the_largest_files_names_escaped(tmp_path):
    watch = StorageWatch(sandbox=None, storage_mb=1)  # type: ignore[arg-type]
    watch.exceeded = LayerUsage(bytes=2 << 20, entries=1, largest=[(2 << 20, f"/app/{HOSTILE}\udcff")])
    assert watch.flag(tmp_path) is not None
    text = (tmp_path / STORAGE_EVIDENCE).read_text(encoding="utf-8")
    _clean(text, lines=5)
    assert "\\xff" in text
