"""Walk a task's parsed ``task.toml`` against ``key_rules.RULES``: what is refused, what is unknown.

This runs before the task's model is built and before any file is looked at, so a task that
asks for something tbflow cannot honour is refused for *that* reason (a multi-step task has no
top-level ``instruction.md``; "missing instruction.md" would hide why it cannot run). The walk
is pure: the loader turns refusals into a ``TaskFormatError`` and unknown keys into notes the job
shows and records.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from tasks_lib.task.key_rules import RULES, Check, Honoured, Refuse, rule_for


class Refusal(BaseModel):
    """One key tbflow cannot honour with this value, and why."""

    key: str
    why: str

    def text(self) -> str:
        return f"{shown_key(self.key)} {self.why}" if self.why.startswith("=") else f"{shown_key(self.key)}: {self.why}"


class KeyVerdicts(BaseModel):
    """What the walk found: refusals (the task cannot run) and keys no schema knows."""

    refusals: list[Refusal] = []
    unknown: list[str] = []


def shown_key(path: str) -> str:
    """``verifier.environment_mode`` → ``[verifier] environment_mode``, as a user finds it in the file."""
    if path.startswith("steps"):
        return "[[steps]]"
    if path == "artifacts" or "." not in path:
        return path
    section, _, rest = path.partition(".")
    if rest in ("collect", "environment") and section == "verifier":
        return f"[{section}.{rest}]" if rest == "environment" else f"[[{section}.{rest}]]"
    if rest in ("healthcheck", "tpu") and section == "environment":
        return f"[{section}.{rest}]"
    return f"[{section}] {rest}"


def _neutral(value: Any, allowed: tuple[Any, ...]) -> bool:
    """A value that asks for nothing: absent, false, zero, empty, or one the row allows."""
    if value in allowed:
        return True
    return value is False or value is None or (value == 0 and not isinstance(value, str)) or value in ([], {}, "")


def _judge(path: str, value: Any, raw: dict, found: KeyVerdicts) -> None:
    covered = rule_for(path)
    if covered is None:
        found.unknown.append(path)
        return
    _, rule = covered
    if isinstance(rule, Refuse):
        if not _neutral(value, rule.allowed):
            found.refusals.append(Refusal(key=path, why=rule.why))
    elif isinstance(rule, Check):
        why = rule.judge(value, raw)
        if why:
            found.refusals.append(Refusal(key=path, why=why))
    elif isinstance(rule, Honoured) and not rule.free and isinstance(value, dict) and path in RULES:
        for key, sub in value.items():
            _judge(f"{path}.{key}", sub, raw, found)


def check_keys(raw: dict) -> KeyVerdicts:
    """Every key of ``raw`` (a parsed ``task.toml``) judged by its row; order as in the file."""
    found = KeyVerdicts()
    for key, value in raw.items():
        _judge(str(key), value, raw, found)
    return found
