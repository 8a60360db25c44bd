"""Issue 31: ``tbflow run examples/taskz`` (a typo of ``examples/tasks``) has the shape of a
package name, ``org/name``, so it was looked up in Harbor's registry and the user read about
registries and git URLs. A word under a directory that exists here is a path: it exits 2 with
"no such directory" and the close names; a package name is still one when its org is no
directory here, or when it carries ``@REF``.
"""

from __future__ import annotations

from task_factory import make_task
from typer.testing import CliRunner

from flows.cli.main import app
from tasks_lib.dataset.names import parse_dataset


def test_typo_under_an_existing_dir_is_no_such_directory_with_a_suggestion(tmp_path, monkeypatch):
    make_task(tmp_path / "examples" / "tasks", "hello")
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["run", "examples/taskz", "--jobs-dir", str(tmp_path / "jobs")])
    assert res.exit_code == 2, res.output
    assert "examples/taskz: no such directory" in res.output, res.output
    assert "did you mean examples/tasks?" in res.output, res.output
    assert "registry" not in res.output, res.output
    assert not (tmp_path / "jobs").exists()


def test_a_path_with_nothing_close_names_no_guess(tmp_path, monkeypatch):
    (tmp_path / "examples").mkdir()
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, ["run", "examples/zzz", "--jobs-dir", str(tmp_path / "jobs")])
    assert res.exit_code == 2 and "examples/zzz: no such directory" in res.output, res.output
    assert "did you mean" not in res.output


def test_package_names_stay_names(tmp_path, monkeypatch):
    (tmp_path / "examples").mkdir()
    monkeypatch.chdir(tmp_path)
    assert parse_dataset("some-org/bench").kind == "package"  # no directory some-org here
    assert parse_dataset("examples/bench@v1").kind == "package"  # @REF: a name, whatever is on disk
    assert parse_dataset("examples/bench").kind == "dir"
