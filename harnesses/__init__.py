"""Harness adapters: one module per agent, behind the interface in ``harnesses.base``."""
