"""Adapters for the agent CLIs (codex, opencode, pi, claude-code) and the parsers of their event logs."""
