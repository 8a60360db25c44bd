"""Resuming a job whose identity changed is refused with what changed; --force-new starts a new
job instead. Identity covers every task file, each harness adapter's source and the run config."""

from pathlib import Path

from typer.testing import CliRunner

from container_events import JobContainerEvents
from task_factory import make_task

from flows.cli.main import app
from tasks_lib.records.job_identity import compute_identity, identity_changes


def _ran(tmp_path, ds):
    res = CliRunner().invoke(app, ["run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "j",
                                   "--harness", "nop"])
    return res


def test_changed_test_sh_refuses_resume_and_force_new_starts_fresh(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "alpha")
    run_job(ds, harnesses=["nop"], job_name="j")
    (ds / "alpha" / "tests" / "test.sh").write_text("#!/bin/bash\necho 1 > /logs/verifier/reward.txt\n")
    res = _ran(tmp_path, ds)
    assert res.exit_code == 2, res.output
    assert "task alpha changed: tests/test.sh" in res.output
    assert "--force-new" in res.output
    # nothing recorded was touched
    assert (tmp_path / "jobs" / "j" / "trials" / "alpha.nop.1" / "trial.json").is_file()
    fresh = run_job(ds, harnesses=["nop"], job_name="j", force_new=True)
    assert Path(fresh.job_dir).name.startswith("j.") and Path(fresh.job_dir) != tmp_path / "jobs" / "j"
    assert len(fresh.records) == 1


def test_changed_timeout_multiplier_and_task_timeout_refuse(run_job, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "alpha")
    run_job(ds, harnesses=["nop"], job_name="j")
    res = CliRunner().invoke(app, ["run", str(ds), "--jobs-dir", str(tmp_path / "jobs"), "--job-name", "j",
                                   "--harness", "nop", "--timeout-multiplier", "2"])
    assert res.exit_code == 2 and "config timeout_multiplier: 1.0 -> 2.0" in res.output
    toml = ds / "alpha" / "task.toml"
    toml.write_text(toml.read_text().replace("timeout_sec = 60", "timeout_sec = 61", 1))
    res = _ran(tmp_path, ds)
    assert res.exit_code == 2 and "task alpha changed: task.toml" in res.output


class _Adapter:
    """A harness whose adapter source lives in a folder of its own."""

    version = "1.0.0"

    def __init__(self, folder):
        self.folder = folder

    def adapter_sources(self):
        return [self.folder]


def test_changed_or_added_adapter_file_changes_identity(tmp_path):
    folder = tmp_path / "myharness"
    folder.mkdir()
    (folder / "adapter.py").write_text("X = 1\n")
    task = make_task(tmp_path / "ds", "alpha")
    before = compute_identity({}, {"alpha": task}, {"mine": _Adapter(folder)})
    (folder / "adapter.py").write_text("X = 2\n")
    after = compute_identity({}, {"alpha": task}, {"mine": _Adapter(folder)})
    changes = identity_changes(before, after)
    assert any("harness mine adapter changed" in c and "adapter.py" in c for c in changes), changes
    (folder / "helpers.py").write_text("Y = 1\n")
    added = identity_changes(after, compute_identity({}, {"alpha": task}, {"mine": _Adapter(folder)}))
    assert any("new files" in c and "helpers.py" in c for c in added), added
    assert before.digest != after.digest


def test_same_identity_resumes_and_keeps_records(run_job, tmp_path, docker_ready):
    ds = tmp_path / "ds"
    make_task(ds, "alpha")
    make_task(ds, "beta")
    first = run_job(ds, harnesses=["nop"], job_name="j")
    job_id = first.job_id
    with JobContainerEvents(docker_ready, job_id=job_id) as seen:  # a live stream: opened after the first run
        res = _ran(tmp_path, ds)
    assert res.exit_code == 0, res.output
    assert "already recorded" in res.output
    assert seen.created == []


def test_cli_adapter_identity_covers_shared_modules_but_not_other_clis():
    from harnesses.registry import get_harness
    from tasks_lib.records.job_identity import adapter_files

    codex = adapter_files(get_harness("codex"))
    assert {"harnesses/cli/codex.py", "harnesses/cli/usage_parsers.py", "harnesses/cli/cli_harness.py",
            "harnesses/bundles/npm_bundle.py", "tasks_lib/trial/harness_api.py"} <= set(codex)
    assert "harnesses/cli/pi.py" not in codex and "harnesses/reference.py" not in codex
    assert set(adapter_files(get_harness("oracle"))) == {"harnesses/reference.py", "tasks_lib/trial/harness_api.py"}


def test_every_cli_module_is_one_clis_own_or_shared_by_all():
    """``SHARED_MODULES`` is listed by hand: a module added to harnesses/cli that is neither a
    built-in CLI's own nor listed there would be left out of every CLI job's identity."""
    import inspect

    import harnesses.cli as cli
    from harnesses.cli.cli_harness import SHARED_MODULES
    from harnesses.registry import builtin_names, resolve_harness

    folder = Path(inspect.getfile(cli)).parent
    own = {Path(inspect.getfile(resolve_harness(n).cls)) for n in builtin_names()}
    modules = {p for p in folder.glob("*.py") if p.name != "__init__.py"}
    assert {p.name for p in modules - own} == set(SHARED_MODULES)
