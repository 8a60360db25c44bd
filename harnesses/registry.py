"""Harness names → adapters. The one place a new harness is registered."""

from __future__ import annotations

from harnesses.base import Harness
from tasks_lib.errors import InputError


def _factories() -> dict[str, type[Harness]]:
    from harnesses.reference import NopHarness, OracleHarness

    return {"oracle": OracleHarness, "nop": NopHarness}


def known_harnesses() -> list[str]:
    return sorted(_factories())


def get_harness(name: str) -> Harness:
    factories = _factories()
    if name not in factories:
        raise InputError("--harness", f"unknown harness {name!r}; known: {', '.join(sorted(factories))}")
    return factories[name]()
