"""Through the real ``tbflow`` command: a ``--harness`` that names nothing usable exits 2 with one
line naming ``--harness`` and what was tried, writes nothing and starts nothing; ``tbflow
harnesses`` lists the built-ins and the installed plug-ins with kind, version and origin."""

import os
import subprocess

import pytest

from plugin_fixtures import install_example
from tbflow_process import ROOT, TBFLOW

EXAMPLES = ROOT / "examples" / "tasks"


def _tbflow(*args, env=None):
    return subprocess.run([*TBFLOW, *args], cwd=ROOT, env=env or dict(os.environ), capture_output=True, text=True,
                          timeout=120)


@pytest.mark.parametrize("ref, words", [
    ("gpt-agent", "tried built-ins: not one of claude-code, codex, gemini-cli, nop, opencode, oracle, pi, qwen-code, "
                  "tbflow-agent; entry points of tbflow.harnesses: none named so"),
    ("{tmp}/missing.toml", "path/file.toml: no file {tmp}/missing.toml"),
    ("json:JSONDecoder", "module:Class: json:JSONDecoder is not a tbflow Harness subclass"),
    ("{tmp}/broken.py:Agent", "importing {tmp}/broken.py failed: ZeroDivisionError"),
])
def test_unknown_harness_exits_2_naming_what_was_tried(tmp_path, ref, words):
    (tmp_path / "broken.py").write_text("1 / 0\n")
    ref, words = ref.format(tmp=tmp_path), words.format(tmp=tmp_path)
    res = _tbflow("run", str(EXAMPLES), "--jobs-dir", str(tmp_path / "jobs"), "--harness", ref)
    assert res.returncode == 2, res.stdout + res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"tbflow: error: --harness: cannot use harness '{ref}'"), lines
    assert words in lines[0]
    assert "Traceback" not in res.stdout + res.stderr
    assert not (tmp_path / "jobs").exists()


def test_harnesses_lists_built_ins_and_installed_plugins_with_kind_version_and_origin(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    project = install_example(site)
    res = _tbflow("harnesses", env=dict(os.environ, PYTHONPATH=str(site)))
    assert res.returncode == 0, res.stderr
    rows = {line.split()[0]: line.split() for line in res.stdout.splitlines() if line.strip()}
    assert rows["oracle"][1:4] == ["reference", "0.1.0", "built-in"]
    assert rows["codex"][1] == "model"
    assert rows["tbflow-agent"][1:4] == ["model", "0.1.0", "built-in"]
    assert rows["qwen-code"][1:4] == ["model", "0.24.4", "built-in"] and rows["gemini-cli"][1:3] == ["model", "0.61.0"]
    assert rows["replay"][1:] == ["reference", "0.1.0", "entry", "point", f"{project['name']}=={project['version']}"]
