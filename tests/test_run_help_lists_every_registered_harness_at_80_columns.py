"""Issue 31: ``tbflow run --help`` named 6 harnesses from a hand-kept list (tbflow-agent, qwen-code,
gemini-cli and the ``.toml`` form were missing, there and in ``tbflow harnesses``' footer), and at
80 columns its help text sat in a 22-character column over 146 lines. The list now comes from the
registry, and the help is plain text that fits 80 columns with room for the words.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from harnesses.registry import builtin_names

ROOT = Path(__file__).resolve().parents[1]


def _tbflow(*args: str) -> str:
    env = {**os.environ, "COLUMNS": "80"}
    res = subprocess.run([sys.executable, "-m", "flows.cli.main", *args], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout


def _words(text: str) -> str:
    """The help as one line: wrapped lines joined, a word broken after its hyphen made whole."""
    return re.sub(r"-\s+", "-", " ".join(line.strip() for line in text.splitlines()))


def test_run_help_names_every_built_in_harness_and_every_form():
    flat = _words(_tbflow("run", "--help"))
    missing = [name for name in builtin_names() if name not in flat]
    assert not missing, f"not in `tbflow run --help`: {missing}"
    for form in ("path/file.toml", "module:Class", "path/file.py:Class", "tbflow harnesses"):
        assert form in flat, form
    assert {"tbflow-agent", "qwen-code", "gemini-cli"} <= set(builtin_names())


def test_run_help_fits_80_columns_in_a_readable_column():
    text = _tbflow("run", "--help")
    lines = text.splitlines()
    assert max(map(len, lines)) <= 80, max(lines, key=len)
    assert len(lines) <= 80, len(lines)
    harness = next(line for line in lines if "--harness" in line)
    column = len(harness) - harness.index("Harness to run")
    assert column >= 40, f"the help column is {column} characters wide: {harness!r}"


def test_harnesses_footer_names_the_toml_form_too():
    out = _tbflow("harnesses")
    for name in builtin_names():
        assert re.search(rf"^{re.escape(name)}\s", out, re.M), name
    footer = _words(out.split("Also:", 1)[1])
    assert "path/file.toml" in footer and "module:Class" in footer and "path/file.py:Class" in footer
