"""A declarative harness file turned into a CLI harness class, and the rules it runs under.

Why a ``CliHarness``: a file-declared agent must get exactly what the built-in CLIs get
(docs/harnesses.md): the container's own HOME, PATH, WORKDIR, user and image ENV, stdin from
``/dev/null``, its own session killed at the deadline, credentials only through the gateway. All
of that is tbflow's, around ``command()``; the file says only what ``command()`` returns, which
bundle is uploaded to ``{bundle}`` = ``/opt/tbflow/<name>`` and how its logs are read.

The bundle: the package (npm, dir, tarball or wheel) at ``{bundle}/package``, plus, with ``node =
true``, tbflow's pinned Node runtime at ``{bundle}/node/bin/node``. It is built once on the host
and cached under the cache key of every input's pin (``assemble_bundle``).

The class of a file is made once per process and path (``declared_class``), in a module of its
own whose ``__file__`` is the TOML file: the job identity then keys a user's file relative to its
own directory (``x.toml``), never by an absolute path, as for a ``path/file.py:Class`` plug-in
(tasks_lib/records/job_identity.py ``plugin_root``); a shipped file is keyed relative to tbflow
(``harnesses/declared/qwen-code.toml``).
"""

from __future__ import annotations

import hashlib
import sys
import threading
import tomllib
import types
from pathlib import Path

from pydantic import ValidationError

from harnesses.bundles.node_runtime import node_provenance, node_runtime, target_machine
from harnesses.bundles.npm_bundle import (BundleProvenance, IntegrityMismatchError, NpmPackage, PackageFetchError,
                                         UnsafePackageError, fetch_package, provenance)
from harnesses.cli.cli_harness import CliHarness, assemble_bundle, link_or_copy, sh_prelude, shared_sources
from harnesses.declared import field_usage, local_bundle
from harnesses.declared.spec import HarnessFile, check_placeholders, fill
from tasks_lib.errors import InputError
from tasks_lib.records.record_models import Usage
from tasks_lib.task.task_model import Task
from tasks_lib.trial.harness_api import AgentCommand, ModelAccess, PreparedHarness

SHIPPED_DIR = Path(__file__).resolve().parent
_lock = threading.Lock()
_classes: dict[tuple[Path, str], type["DeclaredHarness"]] = {}


class DeclaredHarness(CliHarness):
    """A harness whose behaviour is its file's ``spec``; subclasses are made by ``declared_class``."""

    spec: HarnessFile
    spec_path: Path

    @staticmethod
    def usage_from_log(log: Path) -> Usage | None:  # the file's mapping is per instance: see parse_usage
        return None

    @staticmethod
    def error_from_log(log: Path) -> str | None:
        return None

    @property
    def stdout_name(self) -> str:
        return self.spec.logs.stdout

    @property
    def stderr_name(self) -> str:
        return self.spec.logs.stderr or f"{self.name}.stderr.log"

    @property
    def events_name(self) -> str:
        return self.spec.logs.events or self.spec.logs.stdout

    def adapter_sources(self) -> list[Path]:
        """The file itself, the code that reads it (this package), and what every CLI harness
        shares (base class, usage parsers, bundling, the harness interface)."""
        own = [p for p in SHIPPED_DIR.glob("*.py") if p.name != "__init__.py"]
        return sorted({self.spec_path, *own, *shared_sources()})

    def bundle(self) -> tuple[Path, list[BundleProvenance]]:
        b = self.spec.bundle
        inputs: list[BundleProvenance] = []
        if b.npm is not None:
            name, version = b.npm_name_version
            package_dir = fetch_package(NpmPackage(name, version, integrity=b.integrity, harness=self.name))
            inputs.append(provenance(package_dir))

            def put_package(tmp: Path) -> None:
                local_bundle.copy_local("dir", package_dir, tmp / "package")
        else:
            kind, source = self.local_source()
            digest = local_bundle.local_digest(kind, source)
            if (mismatch := self.pin_mismatch(digest)) is not None:
                raise IntegrityMismatchError(f"harness {self.name}: {mismatch}")
            inputs.append(BundleProvenance(name=source.name, version=self.version, integrity=f"sha256:{digest}",
                                           source=f"local-{kind}"))

            def put_package(tmp: Path) -> None:
                local_bundle.copy_local(kind, source, tmp / "package")
        node_dir = None
        if b.node:
            machine = target_machine()
            node_dir = node_runtime(machine)
            inputs.append(node_provenance(machine))

        def fill_bundle(tmp: Path) -> None:
            put_package(tmp)
            if node_dir is not None:
                link_or_copy(node_dir / "bin" / "node", tmp / "node" / "bin" / "node")
        return assemble_bundle(self.name, self.version, inputs, fill_bundle)

    def local_source(self) -> tuple[str, Path]:
        """A local bundle's kind (``dir``, ``tarball``, ``wheel``) and path (relative to the file)."""
        b = self.spec.bundle
        kind = "dir" if b.dir else "tarball" if b.tarball else "wheel"
        return kind, (self.spec_path.parent / (b.dir or b.tarball or b.wheel or "")).resolve()

    def pin_mismatch(self, digest: str) -> str | None:
        """The one line that says a local bundle's ``digest`` is not the file's pin, with both digests."""
        if digest == self.spec.bundle.sha256:
            return None
        kind, source = self.local_source()
        return (f"{self.spec_path}: [bundle] sha256 pins {self.spec.bundle.sha256}, but the {kind} {source} has "
                f"sha256 {digest} (changed since it was pinned; `tbflow harnesses pin {self.spec_path}` prints "
                "the new pin)")

    def problem_before_job(self) -> str | None:
        if self.spec.bundle.npm is not None:
            return None  # checked against its integrity when fetched (a download: not before the job)
        kind, source = self.local_source()
        try:
            return self.pin_mismatch(local_bundle.local_digest(kind, source))
        except (PackageFetchError, UnsafePackageError) as exc:
            return f"{self.spec_path}: [bundle] {exc}"

    def values(self, task: Task, access: ModelAccess | None) -> dict[str, str]:
        values = {"instruction": task.instruction, "bundle": self.target, "state": self.state_dir}
        if access is not None:
            values |= {"model": access.model, "provider": access.provider, "base_url": access.base_url.rstrip("/"),
                       "token": access.token}
        return values

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None) -> AgentCommand:
        if self.kind == "model":
            access = self.require_access(access)
        cmd, values = self.spec.command, self.values(task, access)
        argv = [fill(a, values) for a in cmd.argv]
        env = {k: fill(v, values) for k, v in cmd.env.items()}
        files = [(fill(p, values), fill(c, values)) for p, c in cmd.files.items()]
        if files:
            dirs = sorted({p.rsplit("/", 1)[0] for p, _ in files if p.rsplit("/", 1)[0]})
            argv = sh_prelude(dirs, files, argv)
        return AgentCommand(argv=argv, env=env, stdout_name=self.stdout_name, stderr_name=self.stderr_name,
                            user=cmd.user)

    def parse_usage(self, agent_dir: Path) -> Usage | None:
        if self.spec.usage is None:
            return None
        return field_usage.mapped_usage(self.spec.usage, agent_dir / self.events_name)

    def error_line(self, agent_dir: Path) -> str | None:
        found = field_usage.mapped_error(self.spec.usage, agent_dir / self.events_name)
        if found is None and self.spec.logs.error_pattern:
            logs = [agent_dir / n for n in dict.fromkeys([self.events_name, self.stdout_name, self.stderr_name])]
            found = field_usage.pattern_error(self.spec.logs.error_pattern, logs)
        return found


def _where(loc: tuple) -> str:
    """A pydantic error location as the file's reader sees it: ``[command] argv``, ``[bundle]``."""
    if not loc:
        return ""
    head, rest = f"[{loc[0]}]", [str(p) for p in loc[1:] if p not in ("[key]",)]
    return f"{head} {'.'.join(rest)}" if rest else head


def load_spec(path: Path, shown: str) -> HarnessFile:
    """The checked file, or an ``InputError`` on ``--harness`` naming ``shown`` and the field."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError("--harness", f"{shown}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError("--harness", f"{shown}: not valid TOML: {exc}") from None
    if isinstance(data.get("exit_codes"), dict):
        data["exit_codes"] = {(int(k) if k.lstrip("-").isdigit() else k): v for k, v in data["exit_codes"].items()}
    try:
        spec = HarnessFile.model_validate(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = _where(tuple(err["loc"]))
        message = str(err["msg"]).removeprefix("Value error, ")
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        raise InputError("--harness", f"{shown}: {where + ': ' if where else ''}{message}{more}") from None
    problem = check_placeholders(spec)
    if problem:
        raise InputError("--harness", f"{shown}: {problem}")
    return spec


def declared_class(path: Path, shown: str | None = None) -> type[DeclaredHarness]:
    """The harness class of the file at ``path`` (made once per process, path and content)."""
    path = path.resolve()
    text = path.read_bytes() if path.is_file() else b""
    key = (path, hashlib.sha256(text).hexdigest())
    with _lock:
        if key in _classes:
            return _classes[key]
        spec = load_spec(path, shown or str(path))
        module_name = f"_tbflow_declared_{hashlib.sha256(str(path).encode()).hexdigest()[:12]}_{path.stem.replace('-', '_')}"
        module = sys.modules.get(module_name) or types.ModuleType(module_name, f"declared harness {path.name}")
        module.__file__ = str(path)
        sys.modules[module_name] = module
        h = spec.harness
        cls = type(f"Declared_{h.name.replace('-', '_')}", (DeclaredHarness,), {
            "__module__": module_name, "__doc__": f"The harness declared in {path.name}.",
            "name": h.name, "cli": h.name, "version": h.version, "kind": h.kind, "wire_api": h.wire_api,
            "semantic_exit_codes": dict(spec.exit_codes), "spec": spec, "spec_path": path})
        setattr(module, cls.__name__, cls)
        _classes[key] = cls
        return cls


def shipped() -> dict[str, type[DeclaredHarness]]:
    """The harnesses tbflow ships as files (``harnesses/declared/*.toml``), by name."""
    out: dict[str, type[DeclaredHarness]] = {}
    for path in sorted(SHIPPED_DIR.glob("*.toml")):
        cls = declared_class(path, f"harnesses/declared/{path.name}")
        out[cls.name] = cls
    return out
