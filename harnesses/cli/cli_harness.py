"""What the four agent-CLI harnesses (codex, opencode, pi, claude-code) have in common.

Each CLI is prepared on the host into one cached bundle directory and uploaded under
``/opt/tbflow/<harness>``; the task image is never changed and nothing is installed from the
network inside the container. The command runs the CLI in the task's own environment: HOME,
PATH, WORKDIR and image ENV stay the container's. A harness adds only variables it owns — its
config-dir variable pointing into ``/tmp/tbflow-<harness>/`` (never the container HOME, and never
``/logs``), telemetry and auto-update switches, the per-trial token — plus its event log names:
stdout (the JSON event log) ``<cli>.jsonl``, stderr ``<cli>.stderr.log``.

Config that depends on the trial (the gateway URL) is passed as flags or environment where the
CLI allows it; where a CLI only reads a file (pi's ``models.json``), the argv is ``sh -c`` running the fixed
prelude ``agent_prelude.sh``, which writes it into the harness-owned dir and then ``exec``s the CLI. The token
is only ever an environment variable, never written to a file.

All adapters register the gateway under one fixed provider id, ``tbflow``, rather than
``access.provider``: a provider id such as ``openai`` or ``anthropic`` is built into several
CLIs with its own URL and auth handling, which must not leak in.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
import os
import re
import shutil
from abc import abstractmethod
from importlib import resources
from pathlib import Path
from typing import Callable

from pydantic import Field

from tasks_lib.cache_dir import cache_dir
from tasks_lib.trial import harness_api
from tasks_lib.trial.harness_api import Harness, ModelAccess, PreparedHarness, Upload
from tasks_lib.errors import HarnessSetupError
from tasks_lib.records.record_models import Usage
from tasks_lib.task.task_model import Task

from harnesses.bundles.bundle_cache import build_atomically
from harnesses.bundles.node_runtime import target_machine
from harnesses.bundles.npm_bundle import (BundleProvenance, NpmPackage, PackageFetchError, check_exact_version,
                                          fetch_package, provenance)

#: the env var that carries ``access.token`` for CLIs that take the key's variable name
TOKEN_ENV = "TBFLOW_MODEL_TOKEN"
#: the provider id every adapter registers the gateway under
PROVIDER_ID = "tbflow"
#: retries of a failed model request: a few for transient gateway errors, few enough that a
#: 401 fails in seconds (claude's default of 10 takes about three minutes)
MODEL_RETRIES = 2
_VAR_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: the fixed shell script every ``sh_prelude`` command runs (package data, shellcheck-clean)
PRELUDE_SH = "agent_prelude.sh"
#: bump when the bundle layout changes, so old cache entries are not reused
BUNDLE_LAYOUT = 1
#: the modules of ``harnesses/cli`` every CLI adapter builds on; each other module there is one
#: CLI's own (``tests/test_resume_refuses_changed_identity.py`` fails when a module is neither)
SHARED_MODULES = ("cli_harness.py", "usage_parsers.py")


class UnsupportedPlatformError(PackageFetchError):
    """The harness has no pinned package for this machine."""


class PreparedCliHarness(PreparedHarness):
    """A prepared CLI harness plus what its bundle was built from (for the job's provenance)."""

    provenance: list[BundleProvenance] = Field(default_factory=list)


def v1_url(base_url: str) -> str:
    """``base_url`` ending in ``/v1`` (OpenAI-style clients append ``/responses`` etc.)."""
    base = base_url.rstrip("/")
    return base if base.endswith("/v1") else base + "/v1"


def root_url(base_url: str) -> str:
    """``base_url`` without a trailing ``/v1`` (Anthropic clients add ``/v1/messages``)."""
    base = base_url.rstrip("/")
    return base[: -len("/v1")] if base.endswith("/v1") else base


@functools.cache
def prelude_script() -> str:
    """The text of ``agent_prelude.sh`` (package data beside this module)."""
    return resources.files("harnesses.cli").joinpath(PRELUDE_SH).read_text(encoding="utf-8")


def sh_prelude(dirs: list[str], files: list[tuple[str, str]], argv: list[str],
               env_defaults: dict[str, str] | None = None) -> list[str]:
    """argv of ``sh -c`` that creates ``dirs``, writes ``files`` (path, content), then execs ``argv``.

    ``env_defaults`` are exported only where the image's environment leaves them unset, so an
    image that sets e.g. ``XDG_CONFIG_HOME`` keeps it. The script is the fixed file
    ``agent_prelude.sh``; every input travels as a positional parameter (counted groups: the
    defaults, the dirs, the files, then ``argv``), so nothing is ever quoted into shell code.
    """
    defaults = list((env_defaults or {}).items())
    for key, _ in defaults:
        if not _VAR_NAME.fullmatch(key):
            raise ValueError(f"env default {key!r} is not a variable name")
    return ["sh", "-c", prelude_script(), "sh",
            str(len(defaults)), *(f"{key}={value}" for key, value in defaults),
            str(len(dirs)), *dirs,
            str(len(files)), *(part for file in files for part in file),
            *argv]


def link_or_copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    try:
        os.link(src, dst)  # same cache filesystem: no second copy of a 400 MB binary
    except OSError:
        shutil.copy2(src, dst)
    if not os.access(dst, os.X_OK):
        dst.chmod(0o755)


def assemble_bundle(harness: str, version: str, inputs: list[BundleProvenance],
                    fill: Callable[[Path], list[BundleProvenance] | None]) -> tuple[Path, list[BundleProvenance]]:
    """The cached bundle dir of ``harness@version`` and its provenance; ``fill(tmp)`` builds a miss.

    The cache key is the bundle layout plus every input's integrity, so a bundle is never reused
    across different inputs. ``fill`` may return provenance only known once built (pi's resolved
    dependency tree); it is stored in the manifest and returned on every later hit.
    """
    identity = json.dumps([BUNDLE_LAYOUT, [[p.name, p.version, p.integrity] for p in inputs]])
    key = hashlib.sha256(identity.encode()).hexdigest()[:16]
    entry = cache_dir() / "bundles" / harness / version / key
    expect = {"kind": "harness-bundle", "harness": harness, "version": version, "key": key}

    def build(tmp: Path) -> dict:
        extra = fill(tmp) or []
        return {"provenance": [p.model_dump() for p in [*inputs, *extra]]}

    manifest = build_atomically(entry, expect, build)
    return entry, [BundleProvenance.model_validate(p) for p in manifest["provenance"]]


def shared_sources() -> list[Path]:
    """What every CLI harness's behaviour depends on besides its own module (the job identity)."""
    folder = Path(__file__).resolve().parent
    bundles = [p for p in (folder.parent / "bundles").glob("*.py") if p.name != "__init__.py"]
    return [*(folder / name for name in SHARED_MODULES), *bundles, Path(inspect.getfile(harness_api)).resolve()]


class CliHarness(Harness):
    """Base of the agent-CLI adapters. Subclasses pin ``version`` and say how to bundle and run."""

    kind = "model"
    #: the CLI's own name: log file stem and the binary's name in the bundle
    cli: str

    def __init__(self, version: str | None = None) -> None:
        pinned = type(self).version
        self.version = check_exact_version(self.name, version if version is not None else pinned)
        #: the class's pinned integrities apply only to its pinned version
        self.uses_pinned_version = self.version == pinned

    def adapter_sources(self) -> list[Path]:
        """The files whose change changes this harness's behaviour, for the job identity.

        Its own module plus the shared modules of ``harnesses/cli`` (``SHARED_MODULES``: this base
        class, usage parsing), all of ``harnesses/bundles`` (bundling, Node runtime; taken from the
        folder, so a file added there is covered without anyone listing it) and the harness
        interface (``tasks_lib/trial/harness_api.py``). The reference harnesses, the registry and
        the other CLIs' own modules are left out, so changing codex does not refuse a pi job.
        """
        return sorted({Path(inspect.getfile(type(self))).resolve(), *shared_sources()})

    @property
    def target(self) -> str:
        """Where the bundle lands in the container."""
        return f"/opt/tbflow/{self.name}"

    @property
    def state_dir(self) -> str:
        """Harness-owned writable dir in the container for the CLI's config and state."""
        return f"/tmp/tbflow-{self.name}"

    @property
    def stdout_name(self) -> str:
        return f"{self.cli}.jsonl"

    @property
    def stderr_name(self) -> str:
        return f"{self.cli}.stderr.log"

    def prepare(self, task: Task) -> PreparedCliHarness:
        bundle, prov = self.bundle()
        return PreparedCliHarness(name=self.name, version=self.version, kind=self.kind,
                                  uploads=[Upload(source=bundle, target=self.target)], provenance=prov)

    def require_access(self, access: ModelAccess | None) -> ModelAccess:
        if access is None:
            raise HarnessSetupError(f"harness {self.name} is a model harness: its command needs ModelAccess")
        return access

    @abstractmethod
    def bundle(self) -> tuple[Path, list[BundleProvenance]]:
        """Build (or find cached) the host directory uploaded to ``target``, and its provenance."""

    @staticmethod
    @abstractmethod
    def usage_from_log(log: Path) -> Usage | None: ...

    @staticmethod
    @abstractmethod
    def error_from_log(log: Path) -> str | None: ...

    def parse_usage(self, agent_dir: Path) -> Usage | None:
        return self.usage_from_log(agent_dir / self.stdout_name)

    def error_line(self, agent_dir: Path) -> str | None:
        """The CLI's own failure line from its event log, for an ``invalid: harness`` reason."""
        return self.error_from_log(agent_dir / self.stdout_name)


class NativeCliHarness(CliHarness):
    """A CLI shipped as one native executable in a per-platform npm package.

    Only that executable is bundled, as ``bin/<cli>``: the main package's ``bin/*`` is a Node
    shim (or, for opencode and claude, a placeholder the postinstall script overwrites).
    """

    #: machine → pinned integrity of the platform package at the class's pinned version
    platform_integrity: dict[str, str] = {}

    @abstractmethod
    def platform_package_name(self, machine: str) -> tuple[str, str]:
        """(npm name, npm version) of the platform package for ``machine``."""

    #: path of the executable inside the platform package
    binary_in_package: str

    def platform_package(self) -> NpmPackage:
        machine = target_machine()
        try:
            name, version = self.platform_package_name(machine)
        except KeyError:
            raise UnsupportedPlatformError(
                f"harness {self.name}: no platform package for machine {machine!r}") from None
        integrity = self.platform_integrity.get(machine) if self.uses_pinned_version else None
        return NpmPackage(name, version, integrity=integrity, harness=self.name)

    def bundle(self) -> tuple[Path, list[BundleProvenance]]:
        package_dir = fetch_package(self.platform_package())
        binary = package_dir / self.binary_in_package
        if not binary.is_file():
            raise PackageFetchError(f"harness {self.name}: {self.binary_in_package} missing from {package_dir}")
        return assemble_bundle(self.name, self.version, [provenance(package_dir)],
                               lambda tmp: link_or_copy(binary, tmp / "bin" / self.cli))

