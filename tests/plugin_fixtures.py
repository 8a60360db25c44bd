"""Harness plug-ins for tests: a package or file written into a temporary directory, a dist-info
that makes an entry point visible to ``importlib.metadata``, and the example package
(examples/harness-plugin) installed into a directory as ``pip install --target`` lays it out.

``pip install examples/harness-plugin`` needs setuptools' ``bdist_wheel`` (the ``wheel`` package),
which this offline venv does not have, so ``install_example`` does what pip does with it: it
copies the package and writes a dist-info with the name, version and entry points *read from the
example's pyproject.toml*, so a wrong declaration there fails the tests as it would fail a user.
"""

from __future__ import annotations

import shutil
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "harness-plugin"

HARNESS_CLASS = textwrap.dedent('''\
    from tasks_lib.trial.harness_api import AgentCommand, Harness, PreparedHarness


    class {cls}(Harness):
        name = "{name}"
        version = "{version}"
        kind = "reference"

        def prepare(self, task):
            {prepare}
            return PreparedHarness(name=self.name, version=self.version, kind=self.kind)

        def command(self, task, prepared, access=None):
            return AgentCommand(argv=["true"], stdout_name="{name}.txt")
''')


def harness_source(cls: str = "MyAgent", name: str = "mine", version: str = "1.0.0", prepare: str = "pass") -> str:
    return HARNESS_CLASS.format(cls=cls, name=name, version=version, prepare=prepare)


def write_package(site: Path, package: str = "myplug", module: str = "agent", source: str | None = None) -> Path:
    """``site/package/{__init__,module}.py``; returns the package dir."""
    pkg = site / package
    pkg.mkdir(parents=True, exist_ok=True)
    (pkg / "__init__.py").write_text('"""A test plug-in."""\n')
    (pkg / f"{module}.py").write_text(source or harness_source())
    return pkg


def write_dist_info(site: Path, dist: str, version: str, entry_points: dict[str, str]) -> Path:
    """A minimal installed distribution declaring ``tbflow.harnesses`` entry points."""
    info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
    lines = "".join(f"{k} = {v}\n" for k, v in entry_points.items())
    (info / "entry_points.txt").write_text(f"[tbflow.harnesses]\n{lines}")
    return info


def install_example(site: Path) -> dict:
    """The example plug-in installed into ``site`` (see the module docstring); its ``[project]``."""
    project = tomllib.loads((EXAMPLE / "pyproject.toml").read_text())["project"]
    src = EXAMPLE / "src"
    for pkg in src.iterdir():
        if (pkg / "__init__.py").is_file():
            shutil.copytree(pkg, site / pkg.name, ignore=shutil.ignore_patterns("__pycache__"))
    write_dist_info(site, project["name"], project["version"], project["entry-points"]["tbflow.harnesses"])
    return project


@pytest.fixture
def plugin_site(tmp_path, monkeypatch):
    """A directory on ``sys.path`` for plug-ins; afterwards their modules and tbflow's resolution
    cache are forgotten, so no other test sees them."""
    from harnesses import registry

    site = tmp_path / "site"
    site.mkdir()
    registry._cache.clear()
    monkeypatch.syspath_prepend(str(site))
    yield site
    registry._cache.clear()
    for name, module in list(sys.modules.items()):
        where = str(getattr(module, "__file__", None) or "")
        if where.startswith(str(tmp_path)) or name.startswith("_tbflow_harness_file_"):
            del sys.modules[name]


def forget_plugins(*packages: str) -> None:
    """Drop ``packages`` and resolution results, so the next resolution imports them anew."""
    from harnesses import registry

    registry._cache.clear()
    for name in list(sys.modules):
        if name.split(".")[0] in packages or name.startswith("_tbflow_harness_file_"):
            del sys.modules[name]


#: a valid declarative harness file (str.format template: ``{sha}``, the bundle's pin)
DECLARED_TOML = '''
[harness]
name = "tiny"
version = "0.1.0"
wire_api = "openai-chat"

[bundle]
dir = "agent"
sha256 = "{sha}"

[command]
argv = ["{{bundle}}/package/run.sh", "--model={{model}}", "{{instruction}}"]
env = {{ TINY_KEY = "{{token}}", TINY_URL = "{{base_url}}/v1" }}
files = {{ "{{state}}/conf.json" = '{{"model": "{{model}}"}}' }}

[logs]
stdout = "tiny.jsonl"
error_pattern = 'ERROR: (.*)'

[usage]
match = {{ object = "chat.completion" }}
input = "usage.prompt_tokens"
output = ["usage.completion_tokens"]
combine = "sum"

[exit_codes]
3 = "incomplete"
'''


def write_declared(tmp_path: Path, text: str = DECLARED_TOML, name: str = "x.toml") -> Path:
    """A declarative harness file ``name`` in ``tmp_path`` with its bundle dir ``agent/`` pinned."""
    agent = tmp_path / "agent"
    agent.mkdir(exist_ok=True)
    (agent / "run.sh").write_text("#!/bin/sh\necho hi\n")
    from harnesses.declared.local_bundle import tree_sha256

    path = tmp_path / name
    path.write_text(text.format(sha=tree_sha256(agent)) if "{sha}" in text else text)
    return path
