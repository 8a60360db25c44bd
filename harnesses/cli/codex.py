"""The Codex CLI harness (``@openai/codex``), headless via ``codex exec --json``.

codex is a static Rust binary (musl, static-pie), so it runs in any x86-64 Linux image. Its npm
platform package is an alias of the main package at version ``<version>-linux-x64``. Only
``bin/codex`` is bundled: not the bundled ``rg`` (codex would add it to the agent's PATH), the
sandbox helper (the sandbox is bypassed; the container is the sandbox) or the voice host.

All provider config goes on the command line as ``-c key=value`` (TOML values), so no
``config.toml`` is written; ``CODEX_HOME`` points at a harness-owned dir for codex's own state.
Quirks (docs/architecture.md §5): the Responses wire API is the only one codex speaks, its
base URL ends in ``/v1`` and it appends ``/responses``; analytics must be off or an exit-time
post stalls offline; with the endpoint down it never exits, so the runner's deadline matters.

``CODEX_HOME`` lives under ``/tmp/tbflow-codex``, so codex prints "could not create PATH aliases
… under temporary dir" on stderr and does not prepend its helper-alias dir (``apply_patch``
shims) to the PATH of the commands it runs: the agent's commands see the image's PATH exactly.
codex still applies patches itself (its ``apply_patch`` tool, and shell calls it intercepts).
"""

from __future__ import annotations

import json

from tasks_lib.trial.harness_api import AgentCommand, ModelAccess, PreparedHarness
from tasks_lib.task.task_model import Task

from harnesses.cli import usage_parsers
from harnesses.cli.cli_harness import MODEL_RETRIES, PROVIDER_ID, TOKEN_ENV, NativeCliHarness, sh_prelude, v1_url


def _toml(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    return json.dumps(value)  # a JSON string is a valid TOML basic string


class CodexHarness(NativeCliHarness):
    name = "codex"
    cli = "codex"
    version = "0.169.0"
    wire_api = "openai-responses"
    binary_in_package = "vendor/x86_64-unknown-linux-musl/bin/codex"
    platform_integrity = {
        "x86_64": "sha512-o05NyAOCDygSPRo1yinzxvkRSdmsZyBD9E7mbpmjRanSfM8lypqWtQgEo4XfNkwhuCR2aFu8mlGOsQGFXVbVww==",
    }
    usage_from_log = staticmethod(usage_parsers.codex_usage)
    error_from_log = staticmethod(usage_parsers.codex_error)

    def platform_package_name(self, machine: str) -> tuple[str, str]:
        suffix = {"x86_64": "linux-x64"}[machine]
        return "@openai/codex", f"{self.version}-{suffix}"

    def config(self, access: ModelAccess) -> dict[str, object]:
        """The ``-c`` overrides: the gateway as provider ``tbflow``, few retries, no analytics."""
        p = f"model_providers.{PROVIDER_ID}"
        return {
            "model": access.model,
            "model_provider": PROVIDER_ID,
            f"{p}.name": PROVIDER_ID,
            f"{p}.base_url": v1_url(access.base_url),
            f"{p}.env_key": TOKEN_ENV,
            f"{p}.wire_api": "responses",
            f"{p}.request_max_retries": MODEL_RETRIES,
            f"{p}.stream_max_retries": MODEL_RETRIES,
            "analytics.enabled": False,
            "check_for_update_on_startup": False,
            # codex runs tool commands in a login shell by default, and /etc/profile then resets
            # PATH: the agent would see another PATH than the task image sets
            "allow_login_shell": False,
        }

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None) -> AgentCommand:
        access = self.require_access(access)
        home = f"{self.state_dir}/home"
        argv = [f"{self.target}/bin/codex", "exec", "--json", "--skip-git-repo-check",
                "--dangerously-bypass-approvals-and-sandbox"]
        for key, value in self.config(access).items():
            argv += ["-c", f"{key}={_toml(value)}"]
        argv += ["--", task.instruction]
        env = {"CODEX_HOME": home, TOKEN_ENV: access.token}
        return AgentCommand(argv=sh_prelude([home], [], argv), env=env,
                            stdout_name=self.stdout_name, stderr_name=self.stderr_name)
