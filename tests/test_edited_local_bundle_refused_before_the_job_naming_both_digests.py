"""Issue 31: a local bundle (``[bundle] dir``) edited after it was pinned was found only per trial,
after the job had started (every trial of the harness invalid), and nothing printed the new pin.
``tbflow run`` now refuses it before anything is written, in one line naming the harness file and
both digests; ``tbflow harnesses pin PATH`` prints the pin line to paste.
"""

from __future__ import annotations

from pathlib import Path

from plugin_fixtures import DECLARED_TOML, write_declared
from typer.testing import CliRunner

from flows.cli.harnesses_cli import register as register_harnesses
from flows.cli.main import app
from harnesses.declared.local_bundle import tree_sha256

ROOT = Path(__file__).resolve().parents[1]
register_harnesses(app)


def _harness(tmp_path: Path) -> tuple[Path, str]:
    path = write_declared(tmp_path, name="tiny.toml")
    return path, tree_sha256(tmp_path / "agent")


def test_run_refuses_an_edited_bundle_before_the_job_naming_file_and_both_digests(tmp_path):
    path, pinned = _harness(tmp_path)
    (tmp_path / "agent" / "run.sh").write_text("#!/bin/sh\necho edited\n")
    now = tree_sha256(tmp_path / "agent")
    jobs = tmp_path / "jobs"
    res = CliRunner().invoke(app, ["run", str(ROOT / "examples" / "tasks"), "--harness", str(path),
                                   "--model", "openai/gpt-x", "--jobs-dir", str(jobs)])
    assert res.exit_code == 2, res.output
    line = next(x for x in res.output.splitlines() if x.startswith("tbflow: error: --harness:"))
    assert str(path) in line and pinned in line and now in line, line
    assert f"tbflow harnesses pin {path}" in line
    assert not jobs.exists()


def test_pin_prints_the_line_to_paste_and_says_whether_the_file_matches(tmp_path):
    path, pinned = _harness(tmp_path)
    res = CliRunner().invoke(app, ["harnesses", "pin", str(path)])
    assert res.exit_code == 0, res.output
    assert f'sha256 = "{pinned}"' in res.output and "matches" in res.output

    (tmp_path / "agent" / "run.sh").write_text("#!/bin/sh\necho edited\n")
    now = tree_sha256(tmp_path / "agent")
    res = CliRunner().invoke(app, ["harnesses", "pin", str(path)])
    assert res.exit_code == 1, res.output
    assert f'sha256 = "{now}"' in res.output and pinned in res.output

    res = CliRunner().invoke(app, ["harnesses", "pin", str(tmp_path / "agent")])
    assert res.exit_code == 0 and f'sha256 = "{now}"' in res.output, res.output

    path.write_text(DECLARED_TOML.format(sha=now))
    from harnesses.registry import get_harness

    assert get_harness(str(path)).problem_before_job() is None


def test_pin_of_a_missing_path_exits_2_naming_it(tmp_path):
    res = CliRunner().invoke(app, ["harnesses", "pin", str(tmp_path / "nope")])
    assert res.exit_code == 2 and f"{tmp_path / 'nope'}: no such file or directory" in res.output, res.output
