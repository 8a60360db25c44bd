"""The commands the docs give for printing a pin print the pin tbflow checks (issue 31: a local
bundle had to be re-pinned after each edit, with the digest found only per trial after the job
started; a package dataset's task is pinned by its digest). Each command is taken from its page
and run as written, from the repository root."""

import re
import subprocess
import sys
import tomllib
from pathlib import Path

from doc_pages import DOCS, ROOT
from tasks_lib.dataset.digest import task_digest


def documented_python_line(page: str, needle: str) -> tuple[str, str]:
    """(the ``python -c`` program, its argument) of the line of ``page`` that runs ``needle``."""
    text = (DOCS / page).read_text(encoding="utf-8")
    line = next((x for x in text.splitlines() if x.startswith(".venv/bin/python -c") and needle in x), None)
    assert line, f"docs/{page} shows no `.venv/bin/python -c` line with {needle}"
    m = re.fullmatch(r"\.venv/bin/python -c '([^']+)' (\S+)(?:\s+#.*)?", line.strip())
    assert m, line
    return m.group(1), m.group(2)


def run(program: str, arg: str) -> str:
    res = subprocess.run([sys.executable, "-c", program, arg], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    return res.stdout.strip()


def test_write_a_harness_prints_the_example_bundles_pin():
    program, arg = documented_python_line("write-a-harness.md", "tree_sha256")
    toml = tomllib.loads((ROOT / "examples" / "declared-harness" / "tiny-agent.toml").read_text())
    assert (ROOT / arg) == (ROOT / "examples" / "declared-harness" / toml["bundle"]["dir"])
    assert run(program, arg) == toml["bundle"]["sha256"]


def test_datasets_prints_a_tasks_digest_pin():
    program, _ = documented_python_line("datasets.md", "task_digest")
    task = ROOT / "examples" / "tasks" / "word-count"
    printed = run(program, str(task))
    assert re.fullmatch(r"sha256:[0-9a-f]{64}", printed) and printed == task_digest(Path(task))
