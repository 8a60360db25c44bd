"""docs/write-a-harness.md shows code that is the tested code: its TOML and Python blocks are the
example plug-in's own text or a declarative harness file's (one tbflow ships or the example), its error line is the one tbflow prints, and its deployment snippet
names real Prefect pull steps with their real parameters and passes the flow's parameter schema."""

import importlib
import inspect
import re

import jsonschema
import pytest
import yaml
from prefect.utilities.callables import parameter_schema

from plugin_fixtures import EXAMPLE, ROOT, install_example, plugin_site

from flows.job_flow import job_flow
from harnesses.registry import resolve_harness
from tasks_lib.errors import InputError

__all__ = ["plugin_site"]
DOC = ROOT / "docs" / "write-a-harness.md"


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(), flags=re.S)


def test_toml_and_python_blocks_are_the_example_plugins_own_text():
    declared = [*(ROOT / "harnesses" / "declared").glob("*.toml"), *(ROOT / "examples" / "declared-harness").glob("*.toml")]
    example = "\n".join(p.read_text() for p in [EXAMPLE / "pyproject.toml", *EXAMPLE.rglob("*.py"), *declared])
    blocks = _blocks("toml") + _blocks("python")
    assert len(blocks) >= 2
    for block in blocks:
        assert block in example, block


def test_the_error_line_shown_is_the_one_tbflow_prints(plugin_site):
    (shown,) = [b.strip() for b in _blocks("") if b.startswith("tbflow: error: --harness")]
    with pytest.raises(InputError) as caught:
        resolve_harness("gpt-agent")
    assert shown == f"tbflow: error: {caught.value.where}: {caught.value.message}"


def test_the_deployment_snippet_names_real_pull_steps_and_valid_parameters(plugin_site):
    install_example(plugin_site)
    (snippet,) = _blocks("yaml")
    (deployment,) = yaml.safe_load(snippet)["deployments"]
    path, _, name = deployment["entrypoint"].partition(":")
    assert (ROOT / path).is_file() and name == "job_flow"
    jsonschema.validate(deployment["parameters"], parameter_schema(job_flow).model_dump())
    for step in deployment["pull"]:
        ((qualified, kwargs),) = step.items()
        module, _, fn = qualified.rpartition(".")
        inspect.signature(getattr(importlib.import_module(module), fn)).bind(**kwargs)
