"""The deployment's parameter schema (what ``prefect deploy`` sends the server) lists the
harnesses installed where it ran (built-ins and entry points) and otherwise admits only import
paths, so the server refuses an unknown name before a run exists; an import path the run cannot
resolve is refused by the run itself (state ``Refused``, one line) before any container starts."""

import jsonschema
import pytest
from prefect.utilities.callables import parameter_schema

from plugin_fixtures import install_example, plugin_site

from flows.job_flow import job_flow

__all__ = ["plugin_site"]


def _harnesses_valid(schema: dict, names: list[str]) -> bool:
    try:
        jsonschema.validate({"dataset": "x", "harnesses": names}, schema)
    except jsonschema.ValidationError:
        return False
    return True


def test_schema_enumerates_what_is_installed_at_deploy_time_and_admits_import_paths(plugin_site):
    install_example(plugin_site)
    schema = parameter_schema(job_flow).model_dump()
    names = schema["properties"]["harnesses"]["items"]["anyOf"][0]["enum"]
    assert {"oracle", "nop", "codex", "opencode", "pi", "claude-code", "replay"} <= set(names)
    assert _harnesses_valid(schema, ["oracle", "replay"])
    assert _harnesses_valid(schema, ["my_pkg.agent:MyAgent", "agents/mine.py:Mine"])
    for bad in (["gpt-agent"], ["my_pkg.agent:"], [":Cls"], []):
        assert not _harnesses_valid(schema, bad), bad


@pytest.mark.usefixtures("prefect_local")
def test_an_import_path_the_run_cannot_resolve_is_refused_before_any_container(tmp_path):
    state = job_flow(dataset="examples/tasks", harnesses=["no_such_module_xyz:Agent"], jobs_dir=str(tmp_path / "jobs"),
                     return_state=True)
    assert state.name == "Refused", state
    assert state.message.startswith("parameter harnesses: cannot use harness 'no_such_module_xyz:Agent'")
    assert "\n" not in state.message and "ModuleNotFoundError" in state.message
    assert not (tmp_path / "jobs").exists()
