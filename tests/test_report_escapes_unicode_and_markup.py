"""Untrusted text (reasons, task names, logs) cannot break the Markdown; unicode survives."""

from report_fixtures import make_job, make_trial, write_job_dir

from tasks_lib.report.md_format import code, md
from tasks_lib.report.render_markdown import render_markdown
from tasks_lib.report.results_build import load_results

NASTY = "<details><script>x</script> & | `tick` *bold* [link](http://x) \x1b[31mred\x1b[0m \x00 ünïcødé ✓\nsecond line"


def test_md_filter_escapes_markup_and_flattens_lines():
    out = md(NASTY)
    assert "<" not in out and ">" not in out
    assert "&lt;details&gt;&lt;script&gt;" in out and "&amp;" in out
    assert "\\|" in out and "\\`tick\\`" in out and "\\*bold\\*" in out and "\\[link\\]" in out
    assert "\n" not in out and " ↵ second line" in out
    assert "\x1b" not in out and "\\\\x1b\\[31mred\\\\x1b\\[0m" in out  # colour codes visible (then escaped)
    assert "\\\\x00" in out  # NUL made visible (then escaped)
    assert "ünïcødé ✓" in out
    assert code("trials/a|b/x.txt") == "`trials/a\\|b/x.txt`"
    assert code("we`ird") == "we\\`ird"


def test_report_escapes_reason_and_keeps_unicode(tmp_path):
    trials = [make_trial("tâche-ü", "codex", invalid="verifier", reason=NASTY), make_trial("ok", "codex")]
    job_dir = write_job_dir(tmp_path, make_job(trials), trials)
    out = render_markdown(load_results(job_dir))

    assert "<script>" not in out and "<details><script>" not in out
    assert "&lt;details&gt;&lt;script&gt;x&lt;/script&gt; &amp; \\| \\`tick\\`" in out
    assert "ünïcødé ✓ ↵ second line" in out
    assert "| codex | tâche-ü | 1 | verifier |" in out
    # Every table row of the invalid section still has exactly its 6 columns (no stray pipe).
    row = next(line for line in out.splitlines() if line.startswith("| codex | tâche-ü | 1 | verifier"))
    assert len(row.replace("\\|", "").split("|")) - 2 == 6
