"""Run one call from several threads at once, for tests of caches that must stay atomic."""

from __future__ import annotations

import threading
from typing import Callable, TypeVar

T = TypeVar("T")


def call_concurrently(fn: Callable[[], T], n: int) -> tuple[list[T], list[BaseException]]:
    """Start ``n`` threads that each call ``fn``; return what they returned and what they raised
    (every exception is collected, so the caller's assertion shows it instead of a thread dump)."""
    results: list[T] = []
    errors: list[BaseException] = []

    def one() -> None:
        try:
            results.append(fn())
        except Exception as exc:  # noqa: BLE001 - collected for the caller's assertion
            errors.append(exc)

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return results, errors
