"""``--harness`` resolves built-ins first, then ``tbflow.harnesses`` entry points, then
``module:Class``, then ``path/file.py:Class``; each form is found, keyed and recorded with where it
came from, and whatever is not a usable harness is refused naming ``--harness`` and what was tried."""

import pytest
from pydantic import ValidationError

from plugin_fixtures import harness_source, install_example, plugin_site, write_dist_info, write_package

from flows.job.job_config import JobConfig
from harnesses.registry import get_harness, resolve_harness
from tasks_lib.errors import InputError

__all__ = ["plugin_site"]


def test_a_built_in_wins_over_an_entry_point_of_the_same_name(plugin_site):
    write_package(plugin_site, source=harness_source(name="oracle-impostor"))
    write_dist_info(plugin_site, "impostor", "9.9", {"oracle": "myplug.agent:MyAgent"})
    got = resolve_harness("oracle")
    assert got.source.origin == "built-in" and got.cls.__module__ == "harnesses.reference"


def test_an_installed_entry_point_resolves_with_its_distribution(plugin_site):
    project = install_example(plugin_site)
    got = resolve_harness("replay")
    assert got.key == "replay"
    assert (got.source.origin, got.source.distribution, got.source.distribution_version) == (
        "entry-point", project["name"], project["version"])
    assert got.source.target == "tbflow_example_harness.replay:ReplayHarness"
    assert get_harness("replay").kind == "reference"


def test_module_class_is_keyed_by_the_class_name(plugin_site):
    write_package(plugin_site)
    got = resolve_harness("myplug.agent:MyAgent")
    assert got.key == "mine" and got.source.origin == "module" and got.source.target == "myplug.agent:MyAgent"
    config = JobConfig(dataset="x", harnesses=["oracle", "myplug.agent:MyAgent"])
    assert config.harnesses == ["oracle", "myplug.agent:MyAgent"]


def test_file_class_is_imported_from_its_path(plugin_site, tmp_path):
    path = tmp_path / "agents" / "my_agent.py"
    path.parent.mkdir()
    path.write_text(harness_source(cls="FileAgent", name="file-agent"))
    got = resolve_harness(f"{path}:FileAgent")
    assert got.key == "file-agent" and got.source.origin == "file" and got.source.target == "my_agent.py:FileAgent"
    assert resolve_harness(f"{path}:FileAgent").cls is got.cls  # once per process: every trial, the same class


@pytest.mark.parametrize("ref, words", [
    ("gpt-agent", ["built-ins: not one of", "entry points of tbflow.harnesses: none named so",
                   "not an import path"]),
    ("json:JSONDecoder", ["module:Class", "is not a tbflow Harness subclass"]),
    ("json:NoSuchThing", ["module 'json' has no 'NoSuchThing'"]),
    ("no_such_module_xyz:Agent", ["importing module 'no_such_module_xyz' failed: ModuleNotFoundError"]),
    ("tasks_lib.trial.harness_api:Harness", ["is abstract"]),
    ("harnesses.reference:OracleHarness", ["'oracle' is a built-in harness's"]),
    ("missing/agent.py:Agent", ["path/file.py:Class: no file"]),
])
def test_what_is_not_a_harness_is_refused_naming_what_was_tried(plugin_site, ref, words):
    with pytest.raises(InputError) as caught:
        resolve_harness(ref)
    assert caught.value.where == "--harness"
    assert "\n" not in caught.value.message and f"cannot use harness {ref!r}" in caught.value.message
    for w in words:
        assert w in caught.value.message


def test_a_plugin_that_fails_to_import_is_refused_with_its_error(plugin_site, tmp_path):
    broken = tmp_path / "broken.py"
    broken.write_text("raise RuntimeError('the plug-in is broken')\n")
    with pytest.raises(InputError, match="importing .*broken.py failed: RuntimeError: the plug-in is broken"):
        resolve_harness(f"{broken}:Agent")
    write_dist_info(plugin_site, "broken-dist", "1.0", {"broken-ep": "no_such_pkg_xyz:Agent"})
    with pytest.raises(InputError, match="loading entry point broken-ep .* failed: ModuleNotFoundError"):
        resolve_harness("broken-ep")


def test_two_references_to_one_harness_are_refused_at_config_time(plugin_site, tmp_path):
    write_package(plugin_site)
    path = tmp_path / "again.py"
    path.write_text(harness_source())
    with pytest.raises(ValidationError, match="'myplug.agent:MyAgent' and .* are both 'mine'"):
        JobConfig(dataset="x", harnesses=["myplug.agent:MyAgent", f"{path}:MyAgent"])
