"""Checking tbflow's output with Harbor's own code: trajectory files with its ``Trajectory`` model
(``scripts/harbor-validate.sh``) and an export directory with its models and viewer
(``scripts/harbor-check.sh``), both in the Python 3.12 venv ``scripts/harbor-venv.sh`` builds once.
Tests skip, saying why, only when a script says there is no Python 3.12 here (exit 3): a failed
install (exit 4) or anything Harbor refuses fails them, since the check is their point."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
#: scripts/harbor-validate.sh, for a test that wants its refusal rather than a pass
SCRIPT = ROOT / "scripts" / "harbor-validate.sh"
NO_PYTHON312 = 3


def _run(script: str, *args: str) -> str:
    done = subprocess.run([str(ROOT / "scripts" / script), *args], capture_output=True, text=True, timeout=1200)
    if done.returncode == NO_PYTHON312:
        pytest.skip(f"no Python 3.12 for Harbor 0.26: {done.stderr.strip()}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


#: a test module that runs Harbor's checks says this (this module, or one of the scripts by name)
USES_HARBOR = re.compile(r"harbor_check|harbor-(?:validate|check|task-keys|venv)\.sh")
#: makes Harbor's venv once (minutes of pip on an empty cache); started as the session starts
#: (tests/session_ahead.py), and every Harbor test still runs the script, which waits for it
INSTALL_AHEAD = [str(ROOT / "scripts" / "harbor-venv.sh")]


def harbor_loads(*paths: Path) -> str:
    """Harbor's verdict on trajectory files: fails the test with Harbor's own error when one does not load."""
    return _run("harbor-validate.sh", *map(str, paths))


def harbor_check(out: Path) -> dict:
    """What Harbor's models and viewer read from the export directory ``out`` (a JSON summary)."""
    return json.loads(_run("harbor-check.sh", str(out)))


def export_by_cli(job_dir: str | Path, out: Path):  # noqa: ANN201 - click's Result
    """``tbflow export JOB --format harbor --to OUT`` through the CLI's own command, as a user runs it."""
    import typer
    from typer.testing import CliRunner

    from flows.cli.export_cli import register

    app = typer.Typer()
    register(app)
    app.command("noop")(lambda: None)  # a second command, so the app keeps its subcommand names
    res = CliRunner().invoke(app, ["export", str(job_dir), "--format", "harbor", "--to", str(out)])
    assert res.exit_code == 0, res.output
    return res
