"""The Claude Code harness (``@anthropic-ai/claude-code``), headless via ``claude -p``.

claude is a Bun-compiled executable (glibc); the platform package's ``claude`` is bundled as
``bin/claude`` (the main package's ``bin/claude.exe`` is a placeholder its postinstall replaces).

claude takes everything from the environment, so no file is written: the gateway as
``ANTHROPIC_BASE_URL`` *without* ``/v1`` (claude adds ``/v1/messages``), the per-trial token as
``ANTHROPIC_API_KEY``, its state in ``CLAUDE_CONFIG_DIR`` (a harness-owned dir, not the
container HOME). Quirks (agent-clis.md §3.4): ``--dangerously-skip-permissions`` is refused as
root unless ``IS_SANDBOX=1``; a 401 is retried 10 times (≈ 3 min) unless
``CLAUDE_CODE_MAX_RETRIES`` says otherwise; the ``result`` line reports ``subtype: "success"``
even when ``is_error`` is true.
"""

from __future__ import annotations

from tasks_lib.trial.harness_api import AgentCommand, ModelAccess, PreparedHarness
from tasks_lib.task.task_model import Task

from harnesses.cli import usage_parsers
from harnesses.cli.cli_harness import MODEL_RETRIES, NativeCliHarness, root_url


class ClaudeCodeHarness(NativeCliHarness):
    name = "claude-code"
    cli = "claude"
    version = "2.1.332"
    wire_api = "anthropic-messages"
    binary_in_package = "claude"
    platform_integrity = {
        "x86_64": "sha512-f4JWhzwYutJIHScC7/dYOPX6s28tt7ZADhsOi8zwOHq5fFPEuUeChh2NMfinSg0GrUckYxaeebC4h0DqiKzLcw==",
    }
    usage_from_log = staticmethod(usage_parsers.claude_usage)
    error_from_log = staticmethod(usage_parsers.claude_error)

    def platform_package_name(self, machine: str) -> tuple[str, str]:
        arch = {"x86_64": "x64"}[machine]
        return f"@anthropic-ai/claude-code-linux-{arch}", self.version

    def command(self, task: Task, prepared: PreparedHarness, access: ModelAccess | None) -> AgentCommand:
        access = self.require_access(access)
        argv = [f"{self.target}/bin/claude", "-p", "--output-format", "stream-json", "--verbose",
                "--dangerously-skip-permissions", "--model", access.model, "--", task.instruction]
        env = {
            "CLAUDE_CONFIG_DIR": f"{self.state_dir}/config",
            "ANTHROPIC_BASE_URL": root_url(access.base_url),
            "ANTHROPIC_API_KEY": access.token,
            "ANTHROPIC_MODEL": access.model,
            "ANTHROPIC_SMALL_FAST_MODEL": access.model,
            # every alias a subagent may ask for is the benchmarked model: the gateway refuses any
            # other model for this trial (docs/model-gateway.md), so an honest sub-task must not ask
            "ANTHROPIC_DEFAULT_HAIKU_MODEL": access.model,
            "ANTHROPIC_DEFAULT_SONNET_MODEL": access.model,
            "ANTHROPIC_DEFAULT_OPUS_MODEL": access.model,
            "CLAUDE_CODE_MAX_RETRIES": str(MODEL_RETRIES),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_AUTOUPDATER": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_ERROR_REPORTING": "1",
            "IS_SANDBOX": "1",
        }
        return AgentCommand(argv=argv, env=env, stdout_name=self.stdout_name, stderr_name=self.stderr_name)
