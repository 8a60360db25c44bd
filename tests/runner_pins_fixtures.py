"""The synthetic test.sh fixtures of tests/fixtures/test_sh/ (one per census pattern, see its README)."""

from __future__ import annotations

from pathlib import Path

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "test_sh"


def fixture_test_sh(pattern: str) -> str:
    """The text of ``tests/fixtures/test_sh/<pattern>.test_sh``."""
    return (FIXTURES / f"{pattern}.test_sh").read_text(encoding="utf-8")


STANDARD = "standard"  # the standard TB 2.x prologue, in our own words
