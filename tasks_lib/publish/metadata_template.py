"""The leaderboard's ``metadata.yaml``, as a template with what the job already knows filled in.

Written as text (no YAML library needed): every value is a JSON string literal, which YAML reads
as the same string, so a model name with a colon or a quote cannot break the file.
"""

from __future__ import annotations

import json

_TODO = "TODO"


def _q(value: str | None) -> str:
    return json.dumps(value if value else _TODO, ensure_ascii=True)


def metadata_yaml(harnesses: list[str], model: str | None) -> str:
    """The submission's ``metadata.yaml`` (fields from the leaderboard's README); TODO where a
    person must fill in what tbflow cannot know (the agent's URL, display names)."""
    provider, _, name = (model or "").partition("/")
    if not name:
        provider, name = "", provider
    lines = [
        "# Terminal-Bench leaderboard submission metadata (written by `tbflow export --format harbor`).",
        "# Replace every TODO before opening the pull request.",
        "agent_url: " + _q(None),
        "agent_display_name: " + _q(", ".join(harnesses)),
        "agent_org_display_name: " + _q(None),
        "models:",
        "  - model_name: " + _q(name),
        "    model_provider: " + _q(provider),
        "    model_display_name: " + _q(name),
        "    model_org_display_name: " + _q(None),
    ]
    return "\n".join(lines) + "\n"
