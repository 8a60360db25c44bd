"""The pi harness (``@mariozechner/pi-coding-agent``), headless via ``pi -p --mode json``.

pi is a Node program, not a single executable, so its bundle is its whole ``node_modules`` tree
(≈ 188 packages, ≈ 204 MB) plus a pinned Node runtime (``node_runtime``) at ``node/bin/node``.

The tree comes from ``npm install --ignore-scripts`` (no install scripts run on the host) for
linux/x64/glibc. tbflow checks the top package's integrity against its pin itself; npm checks
every tarball of the tree against the integrity in the registry's metadata, the same source
``npm view`` would give, so a corrupted download cannot land. pi's own dependencies are ranges,
so the pinned version installs from a lockfile of its whole tree (``locks/``): the tree tbflow
was tested with, not what the ranges resolve to today (a registry that listed a new AWS SDK
release before the versions it needs made a fresh install fail). Another version resolves its
ranges. The tree (each package's version and integrity) is recorded, as a digest, in the
bundle's provenance; the cache keeps the first tree installed.

Per trial, ``models.json`` (the gateway as an ``openai-completions`` provider whose ``apiKey``
names the token's environment variable, not the token) is written into ``PI_CODING_AGENT_DIR``
by an ``sh -c`` prelude: pi reads no provider URL from its environment. Beware: pi exits 0 after
a 401 in JSON mode, which is why validity is judged by usage (``usage_parsers.pi_usage``).

``settings.json`` (written beside it) does two things. It caps retries like the other CLIs':
pi's own retry of a failed turn (default 3, backoff 2/4/8 s) at ``MODEL_RETRIES``, and the
OpenAI SDK's retries inside each turn at 0, so a model that keeps failing (429, 5xx) ends the
run in seconds with its error line. And it keeps the shell tool's PATH the image's: pi's bash
tool prepends its managed-binaries dir (``$PI_CODING_AGENT_DIR/bin``, for the fd/rg it would
download) to the PATH of every command; ``shellCommandPrefix`` — a line pi runs in the same
shell before each command — strips exactly that entry again.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
from pathlib import Path

from tasks_lib.cache_dir import cache_dir
from tasks_lib.trial.harness_api import AgentCommand, ModelAccess, PreparedHarness
from tasks_lib.task.task_model import Task

from harnesses.cli import usage_parsers
from harnesses.cli.cli_harness import (MODEL_RETRIES, PROVIDER_ID, TOKEN_ENV, CliHarness, UnsupportedPlatformError,
                                       assemble_bundle, link_or_copy, sh_prelude, v1_url)
from harnesses.bundles.node_runtime import node_provenance, node_runtime, target_machine
from harnesses.bundles.npm_bundle import (BundleProvenance, IntegrityMismatchError, NpmPackage, PackageFetchError,
                                          registry_integrity, run_npm)

PACKAGE = "@mariozechner/pi-coding-agent"
CLI_JS = f"node_modules/{PACKAGE}/dist/cli.js"
#: npm lockfiles of the pinned versions' whole trees (npm's own format, v3): installed from one,
#: a bundle is the tree tbflow was tested with, not whatever the dependencies' ranges resolve to
#: today (a registry that lists a package before the versions it needs broke a fresh install)
LOCKS = Path(__file__).parent / "locks"
#: npm's --os/--cpu/--libc for the container, per host machine
NPM_PLATFORM = {"x86_64": ["--os", "linux", "--cpu", "x64", "--libc", "glibc"]}
CONTEXT_TOKENS = 200_000
OUTPUT_TOKENS = 32_000


def prompt_arg(instruction: str) -> str:
    """The instruction as pi's positional message argument.

    pi's argument parser has no ``--``: an argument starting with ``-`` is taken as a flag and
    one starting with ``@`` as a file to attach. Such an instruction gets one leading space.
    """
    return " " + instruction if instruction.startswith(("-", "@")) else instruction


class PiHarness(CliHarness):
    name = "pi"
    cli = "pi"
    version = "0.73.1"
    wire_api = "openai-chat"
    integrity = "sha512-gXQh3SaZmWTfVMc4Ao5+LGbVeKvzyO7tolok0nLsZgq9nGjZx/EEU3NM8C+qUnB4Nvs2rswG5qOVgLzQkq0fHQ=="
    usage_from_log = staticmethod(usage_parsers.pi_usage)
    error_from_log = staticmethod(usage_parsers.pi_error)

    def package(self) -> NpmPackage:
        return NpmPackage(PACKAGE, self.version, integrity=self.integrity if self.uses_pinned_version else None,
                          harness=self.name)

    def bundle(self) -> tuple[Path, list[BundleProvenance]]:
        machine = target_machine()
        if machine not in NPM_PLATFORM:
            raise UnsupportedPlatformError(f"harness {self.name}: no pinned platform for machine {machine!r}")
        pkg = self.package()
        integrity = pkg.integrity or registry_integrity(pkg, cache_dir())
        top = BundleProvenance(name=PACKAGE, version=self.version, integrity=integrity, source="npm")
        node_dir = node_runtime(machine)
        return assemble_bundle(self.name, self.version, [top, node_provenance(machine)],
                               lambda tmp: self._fill(tmp, pkg, integrity, node_dir, NPM_PLATFORM[machine]))

    def _fill(self, tmp: Path, pkg: NpmPackage, integrity: str, node_dir: Path,
              platform_flags: list[str]) -> list[BundleProvenance]:
        lock = LOCKS / f"pi-{self.version}.package-lock.json"
        locked = self.uses_pinned_version and lock.is_file()
        if locked:  # the tree as resolved and tested, whatever the registry published since
            (tmp / "package.json").write_text(json.dumps(json.loads(lock.read_text())["packages"][""]))
            shutil.copyfile(lock, tmp / "package-lock.json")
        run_npm(["install", "--prefix", str(tmp), "--ignore-scripts", "--no-audit", "--no-fund", "--no-save",
                 "--no-bin-links", "--loglevel", "error", *platform_flags, *([] if locked else [pkg.spec])],
                tmp, f"installing {pkg.spec}")
        for name in ("package.json", "package-lock.json"):
            (tmp / name).unlink(missing_ok=True)
        tree = self._check_tree(tmp, integrity)
        link_or_copy(node_dir / "bin" / "node", tmp / "node" / "bin" / "node")
        self._check_runs(tmp)
        digest = hashlib.sha256("\n".join(tree).encode()).hexdigest()
        return [BundleProvenance(name=f"{PACKAGE} dependency tree", version=self.version,
                                 integrity=f"sha256:{digest}", source="npm-tree", files=len(tree))]

    def _check_tree(self, tmp: Path, integrity: str) -> list[str]:
        """Sorted ``path name@version integrity`` lines of npm's hidden lockfile; checks the top package."""
        try:
            packages = json.loads((tmp / "node_modules" / ".package-lock.json").read_text())["packages"]
        except (OSError, ValueError, KeyError) as exc:
            raise PackageFetchError(f"installing {PACKAGE}: npm left no readable lockfile: {exc}") from exc
        top = packages.get(f"node_modules/{PACKAGE}", {})
        if top.get("version") != self.version or top.get("integrity") != integrity:
            raise IntegrityMismatchError(f"npm installed {PACKAGE}@{top.get('version')} with integrity "
                                         f"{top.get('integrity')}, want {self.version} with {integrity}")
        return sorted(f"{path} {meta.get('version')} {meta.get('integrity')}"
                      for path, meta in packages.items() if path)

    def _check_runs(self, tmp: Path) -> None:
        """``pi --version`` on the host with the bundled node: the tree is complete and loads."""
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(tmp / ".home"),
               "PI_CODING_AGENT_DIR": str(tmp / ".home" / "agent"), "PI_OFFLINE": "1", "PI_TELEMETRY": "0"}
        try:
            proc = subprocess.run([str(tmp / "node" / "bin" / "node"), str(tmp / CLI_JS), "--version"], env=env,
                                  capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
        except (OSError, subprocess.TimeoutExpired) as exc:
            raise PackageFetchError(f"bundled pi does not run: {exc}") from exc
        finally:
            shutil.rmtree(tmp / ".home", ignore_errors=True)
        if proc.returncode != 0 or self.version not in proc.stdout + proc.stderr:
            raise PackageFetchError(f"bundled pi --version exited {proc.returncode}: "
                                    f"{(proc.stdout + proc.stderr).strip()[-500:]}")

    def models_json(self, access: ModelAccess) -> str:
        return json.dumps({"providers": {PROVIDER_ID: {
            "baseUrl": v1_url(access.base_url),
            "api": "openai-completions",
            "apiKey": TOKEN_ENV,
            "compat": {"supportsDeveloperRole": False, "supportsReasoningEffort": False},
            "models": [{"id": access.model, "name": access.model, "reasoning": False,
                        "contextWindow": CONTEXT_TOKENS, "maxTokens": OUTPUT_TOKENS}]}}})

    def settings_json(self, agent_dir: str) -> str:
        bin_dir = f"{agent_dir}/bin"  # pi's getBinDir(): what its bash tool prepends to PATH
        return json.dumps({
            "retry": {"enabled": True, "maxRetries": MODEL_RETRIES, "provider": {"maxRetries": 0}},
            "shellCommandPrefix": f'PATH="${{PATH#{bin_dir}:}}"',
        })

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None) -> AgentCommand:
        access = self.require_access(access)
        agent_dir = f"{self.state_dir}/agent"
        argv = [f"{self.target}/node/bin/node", f"{self.target}/{CLI_JS}", "-p", "--mode", "json",
                "--provider", PROVIDER_ID, "--model", access.model, "--no-session", prompt_arg(task.instruction)]
        env = {"PI_CODING_AGENT_DIR": agent_dir, "PI_OFFLINE": "1", "PI_TELEMETRY": "0", TOKEN_ENV: access.token}
        argv = sh_prelude([agent_dir], [(f"{agent_dir}/models.json", self.models_json(access)),
                                        (f"{agent_dir}/settings.json", self.settings_json(agent_dir))], argv)
        return AgentCommand(argv=argv, env=env, stdout_name=self.stdout_name, stderr_name=self.stderr_name)
