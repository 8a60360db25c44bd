"""The opencode harness (``opencode-ai``), headless via ``opencode run --format json``.

opencode is a Bun-compiled executable (glibc). The x86-64 platform package comes in two builds;
``-baseline`` is chosen when the host CPU lacks AVX2 (the container runs on the host's CPU).

Config goes in ``OPENCODE_CONFIG_CONTENT`` (the gateway as an ``@ai-sdk/openai-compatible``
provider, key read from ``{env:TBFLOW_MODEL_TOKEN}``), which outranks every file, and project
config is disabled: otherwise an ``opencode.json`` in the task's work dir wins (agent-clis.md
§3.2). opencode has no data-dir variable of its own, only XDG; an ``sh -c`` prelude points
``XDG_CONFIG_HOME``/``XDG_DATA_HOME``/``XDG_CACHE_HOME``/``XDG_STATE_HOME`` into a harness-owned
dir *only where the image leaves them unset*, so the container HOME gets no opencode files and
an image's own XDG choice is kept. The agent's commands inherit these (a config/cache location
move only). The config dir gets an ``.npmrc`` (offline, cache outside HOME): opencode installs
``@opencode-ai/plugin`` into every config dir in the background, which otherwise writes
``~/.npm`` and reaches for the network. ``--auto`` approves the permission prompts headless mode
cannot answer (e.g. files outside the work dir), like the other CLIs' bypass flags.

Retries: opencode does not retry a 401. A retryable failure (429, 5xx, an unreachable endpoint)
is retried by its session loop, which 1.18.33 caps at 5 retries (2/4/8/16/30 s, up to 25 %
jitter: the run ends after ≈ 60–75 s with its ``error`` line) and which no setting changes: the
``experimental.max_retries`` / ``session.retry`` proposals were never merged (upstream issue
"Configurable retry policy", anomalyco/opencode#43596). Its AI SDK layer retries nothing
(``maxRetries`` 0). So there is no knob to set here; the cap is the CLI's own. A ``Retry-After``
from the provider is obeyed as sent.
"""

from __future__ import annotations

import json
from pathlib import Path

from tasks_lib.trial.harness_api import AgentCommand, ModelAccess, PreparedHarness
from tasks_lib.task.task_model import Task

from harnesses.cli import usage_parsers
from harnesses.cli.cli_harness import PROVIDER_ID, TOKEN_ENV, NativeCliHarness, sh_prelude, v1_url

#: model limits declared to opencode (it needs some; the gateway's model decides the real ones)
CONTEXT_TOKENS = 200_000
OUTPUT_TOKENS = 32_000
#: npm config for opencode's background install of ``@opencode-ai/plugin`` into its config dir:
#: offline (it would fail in a networkless trial anyway) and with npm's cache out of HOME
NPMRC = "offline=true\ncache={cache}"


def host_has_avx2(cpuinfo: Path = Path("/proc/cpuinfo")) -> bool:
    try:
        return " avx2" in cpuinfo.read_text()
    except OSError:
        return True


class OpencodeHarness(NativeCliHarness):
    name = "opencode"
    cli = "opencode"
    version = "1.18.33"
    wire_api = "openai-chat"
    binary_in_package = "bin/opencode"
    usage_from_log = staticmethod(usage_parsers.opencode_usage)
    error_from_log = staticmethod(usage_parsers.opencode_error)
    #: (machine, baseline?) → pinned integrity at the pinned version
    integrities = {
        ("x86_64", False): "sha512-q/t/3p2CTxOT9y2kvjesb/LZab2+1eqlhhWA02Be6mjTtmYtNBcBsrI5yDo4Fw7ZSPBW2oyMIGMNRqiKQjiAWw==",
        ("x86_64", True): "sha512-1KQGBiiDDeL/VHHbHkOvvFo8Jr97WT5+C1tear+p7IcDTnXgVHXqIjU4O4jM4mHQzykTP2i884FCnW5LDa+zCA==",
    }

    def __init__(self, version: str | None = None, baseline: bool | None = None) -> None:
        super().__init__(version)
        self.baseline = (not host_has_avx2()) if baseline is None else baseline
        self.platform_integrity = {m: i for (m, b), i in self.integrities.items() if b == self.baseline}

    def platform_package_name(self, machine: str) -> tuple[str, str]:
        arch = {"x86_64": "x64"}[machine]
        return f"opencode-linux-{arch}{'-baseline' if self.baseline else ''}", self.version

    def config(self, access: ModelAccess) -> dict:
        model = {"name": access.model, "tool_call": True,
                 "limit": {"context": CONTEXT_TOKENS, "output": OUTPUT_TOKENS}}
        return {
            "provider": {PROVIDER_ID: {
                "npm": "@ai-sdk/openai-compatible", "name": "tbflow gateway",
                "options": {"baseURL": v1_url(access.base_url), "apiKey": "{env:%s}" % TOKEN_ENV},
                "models": {access.model: model}}},
            "model": f"{PROVIDER_ID}/{access.model}",
            "small_model": f"{PROVIDER_ID}/{access.model}",
            "autoupdate": False,
            "share": "disabled",
        }

    def xdg_defaults(self) -> dict[str, str]:
        return {f"XDG_{kind}_HOME": f"{self.state_dir}/{kind.lower()}" for kind in ("CONFIG", "DATA", "CACHE", "STATE")}

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None) -> AgentCommand:
        access = self.require_access(access)
        argv = [f"{self.target}/bin/opencode", "run", "--format", "json", "--auto",
                "-m", f"{PROVIDER_ID}/{access.model}", "--", task.instruction]
        env = {
            "OPENCODE_CONFIG_CONTENT": json.dumps(self.config(access)),
            "OPENCODE_DISABLE_PROJECT_CONFIG": "1",
            "OPENCODE_DISABLE_AUTOUPDATE": "1",
            "OPENCODE_DISABLE_MODELS_FETCH": "1",
            "OPENCODE_DISABLE_SHARE": "1",
            "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
            "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
            TOKEN_ENV: access.token,
        }
        config_dir = f"{self.state_dir}/config/opencode"
        argv = sh_prelude([config_dir], [(f"{config_dir}/.npmrc", NPMRC.format(cache=f"{self.state_dir}/npm-cache"))],
                          argv, env_defaults=self.xdg_defaults())
        return AgentCommand(argv=argv, env=env, stdout_name=self.stdout_name, stderr_name=self.stderr_name)
