"""report.html in a real browser (headless Chromium): the failures pinned are a report that needs
the network (a CDN script would leave a CI artifact blank), filters that do not filter, an
agent's output that becomes markup or a terminal escape, and re-renders that change bytes."""

from __future__ import annotations

import re

from headless_chromium import dump_dom
from html_report_fixture import html_job

from tasks_lib.report.html.render_html import REPORT_HTML, TRIAL_PAGES, trial_page_name
from tasks_lib.report.report_files import write_reports


def _visible_rows(dom: str) -> list[str]:
    rows = re.findall(r"<tr data-status=[^>]*>", dom)
    return [re.search(r'data-task="([^"]*)" ?', r).group(1) + "/" + re.search(r'data-harness="([^"]*)"', r).group(1)
            for r in rows if "hidden" not in r]


def _files(job_dir):
    return {p.relative_to(job_dir).as_posix(): p.read_bytes()
            for p in sorted([job_dir / REPORT_HTML, *(job_dir / TRIAL_PAGES).glob("*.html")])}


def test_report_html_is_offline_reproducible_and_filters_by_url_hash(tmp_path):
    job_dir, trials = html_job(tmp_path)
    write_reports(job_dir)
    first = _files(job_dir)
    assert len(first) == 1 + len(trials)
    write_reports(job_dir)
    assert _files(job_dir) == first, "same records must give identical report.html bytes"
    for name, data in first.items():
        text = data.decode()
        assert not re.search(r"""(src|href)=["']?(https?:)?//""", text), f"{name} loads from the network"
        assert "<link" not in text and "@import" not in text, name

    index = job_dir / REPORT_HTML
    assert _visible_rows(dump_dom(index)) == ["bye/codex", "hello/codex", "bye/oracle"]
    assert _visible_rows(dump_dom(index, "status=invalid")) == ["bye/codex"]
    assert _visible_rows(dump_dom(index, "kind=environment")) == ["bye/codex"]
    assert _visible_rows(dump_dom(index, "flag=tampering")) == ["bye/oracle"]
    assert _visible_rows(dump_dom(index, "harness=codex&task=HEL")) == ["hello/codex"]
    dom = dump_dom(index, "status=passed")
    assert "1 of 3 trials shown" in dom


def test_trial_pages_show_verdict_ctrf_trajectory_escaped(tmp_path):
    job_dir, trials = html_job(tmp_path)
    write_reports(job_dir)
    pages = job_dir / TRIAL_PAGES
    passed = dump_dom(pages / trial_page_name(trials[0].trial_id))
    assert "tool call <strong>shell</strong>" in passed and "1200 in (1000 cached)" in passed
    assert "cost $0.0021" in passed and "cost $0.0038" in passed
    assert '<span id="cost">$0.0038</span>' in passed and "unknown" not in passed  # one cost on the page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in passed and "<script>alert" not in passed
    assert "\\x1b]52;c;cGF3bmVk\\x07" in passed and "\x1b" not in passed
    assert re.search(r"<details><summary>output \(\d+ characters\)</summary>", passed), "outputs start collapsed"

    invalid = dump_dom(pages / trial_page_name(trials[1].trial_id))
    assert '<p id="verdict" class="invalid"><strong>invalid</strong> (environment)' in invalid
    assert "docker build failed" in invalid and "builds/bye.log" in invalid
    assert "no trajectory recorded" in invalid

    flagged = dump_dom(pages / trial_page_name(trials[2].trial_id))
    assert "tampering" in flagged and "verifier/tamper.log" in flagged and "<img" not in flagged
    assert "test_&lt;b&gt;content&lt;/b&gt;" in flagged and "assert 'hullo' == 'hello'" in flagged
