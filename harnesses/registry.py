"""Harness names → adapters. The one place a new harness is registered."""

from __future__ import annotations

from tasks_lib.trial.harness_api import Harness
from tasks_lib.errors import InputError


def _factories() -> dict[str, type[Harness]]:
    from harnesses.cli.claude_code import ClaudeCodeHarness
    from harnesses.cli.codex import CodexHarness
    from harnesses.cli.opencode import OpencodeHarness
    from harnesses.cli.pi import PiHarness
    from harnesses.reference import NopHarness, OracleHarness

    return {"oracle": OracleHarness, "nop": NopHarness, "codex": CodexHarness,
            "opencode": OpencodeHarness, "pi": PiHarness, "claude-code": ClaudeCodeHarness}


def known_harnesses() -> list[str]:
    return sorted(_factories())


def get_harness(name: str) -> Harness:
    factories = _factories()
    if name not in factories:
        raise InputError("--harness", f"unknown harness {name!r}; known: {', '.join(sorted(factories))}")
    return factories[name]()
