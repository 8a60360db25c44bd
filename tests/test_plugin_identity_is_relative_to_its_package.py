"""A plug-in's part of the job identity never holds a path of this machine: its files are keyed
relative to the directory its package (or its file) is in, an entry point adds its distribution
and version, and the config names it by its key. So the same plug-in in another place (another
machine, another venv) resumes the job, and an edited one is refused saying which file changed.
Planning only: nothing here starts a container."""

import json
import shutil

import pytest

from plugin_fixtures import forget_plugins, harness_source, install_example, plugin_site, write_package
from task_factory import make_task

from flows.job.job_config import JobConfig
from flows.job.job_plan import plan
from flows.job.job_result import job_record
from tasks_lib.errors import InputError
from tasks_lib.store.job_store import JobStore

__all__ = ["plugin_site"]


def _planned(ds, jobs, refs):
    forget_plugins("myplug", "tbflow_example_harness")
    return plan(JobConfig(dataset=str(ds), harnesses=refs, jobs_dir=str(jobs), job_name="j"), "job-1")


def _record(p):
    JobStore(p.job_dir).write_job(job_record(p))


def test_the_same_package_in_two_places_has_one_identity_and_an_edit_is_refused(plugin_site, tmp_path, monkeypatch):
    ds = tmp_path / "ds"
    make_task(ds, "alpha")
    jobs = tmp_path / "jobs"
    first_site = plugin_site
    write_package(first_site)
    first = _planned(ds, jobs, ["myplug.agent:MyAgent"])
    dump = json.dumps(first.identity.model_dump(mode="json"))
    assert str(tmp_path) not in dump
    assert {"myplug/agent.py", "myplug/__init__.py", "tasks_lib/trial/harness_api.py"} <= set(
        first.identity.harnesses["mine"].files)
    assert first.identity.config["harnesses"] == ["mine"]
    assert [s.trial_id for s in first.specs] == ["alpha.mine.1"] and first.specs[0].harness_ref == "myplug.agent:MyAgent"
    _record(first)

    other_site = tmp_path / "elsewhere" / "venv" / "site-packages"
    shutil.copytree(first_site / "myplug", other_site / "myplug")
    shutil.rmtree(first_site / "myplug")
    monkeypatch.syspath_prepend(str(other_site))
    again = _planned(ds, jobs, ["myplug.agent:MyAgent"])  # a resume from the other copy: accepted
    assert again.previous is not None and again.identity.digest == first.identity.digest

    (other_site / "myplug" / "agent.py").write_text(harness_source() + "\n# a fix\n")
    with pytest.raises(InputError) as refused:
        _planned(ds, jobs, ["myplug.agent:MyAgent"])
    assert "harness mine adapter changed: myplug/agent.py" in refused.value.message


def test_a_file_plugin_named_by_another_path_is_the_same_job(plugin_site, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "alpha")
    jobs = tmp_path / "jobs"
    for where in ("a", "b"):
        (tmp_path / where).mkdir()
        (tmp_path / where / "agent.py").write_text(harness_source(cls="FileAgent", name="file-agent"))
    first = _planned(ds, jobs, [f"{tmp_path / 'a' / 'agent.py'}:FileAgent"])
    assert set(first.identity.harnesses["file-agent"].files) == {"agent.py", "tasks_lib/trial/harness_api.py"}
    _record(first)
    second = _planned(ds, jobs, [f"{tmp_path / 'b' / 'agent.py'}:FileAgent"])
    assert second.previous is not None and second.identity == first.identity


def test_an_entry_point_identity_names_its_distribution_and_version(plugin_site, tmp_path):
    ds = tmp_path / "ds"
    make_task(ds, "alpha")
    project = install_example(plugin_site)
    p = _planned(ds, tmp_path / "jobs", ["replay"])
    ident = p.identity.harnesses["replay"]
    assert f"{project['name']}=={project['version']}" in (ident.source or "")
    assert {"tbflow_example_harness/replay.py", "harnesses/reference.py"} <= set(ident.files)
    _record(p)
    info = next(plugin_site.glob("*.dist-info"))
    info.rename(plugin_site / f"{info.name.split('-')[0]}-0.2.0.dist-info")
    (plugin_site / f"{info.name.split('-')[0]}-0.2.0.dist-info" / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: 0.2.0\n")
    with pytest.raises(InputError, match=r"harness replay source: .*==0\.1\.0.* -> .*==0\.2\.0"):
        _planned(ds, tmp_path / "jobs", ["replay"])
