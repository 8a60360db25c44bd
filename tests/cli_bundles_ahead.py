"""The shipped agent CLIs' bundles, made once as the session starts (tests/session_ahead.py).

Why: the bundle cache has no lock (harnesses/bundles/bundle_cache.py: racing builders each build,
the first rename wins). The suite starts its longest tests first, and several run the real CLIs
at once on different workers: on CI's empty cache each of them fetched, verified and unpacked the
same ~1 GB of npm packages on a loaded 2-core machine. Here one process builds every shipped
CLI's bundle while holding ``LOCK``, and a test job naming a CLI waits for that lock before it
starts (``wait_for_bundles``), so the later jobs find the cache warm. What a job checks does not
change: it prepares its bundles itself, as before, and a cache hit re-checks the entry's manifest.

Run as ``python tests/cli_bundles_ahead.py [--held]`` (from the repo's venv; with ``--held`` it takes
the lock, then waits for ``go`` on stdin before it builds).
"""

from __future__ import annotations

import fcntl
import re
import select
import sys
import time
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: a test module that runs the real CLIs says one of these
USES_CLIS = re.compile(r"cli_model|shared_cli_jobs|happy_cli_job")
#: at most this long held (a server start fails after 180 s): then it builds all the same, for the
#: jobs that wait on its lock
HOLD_SEC = 240
#: holds the lock from the start, builds once told to go (tests/session_ahead.py)
COMMAND = [sys.executable, str(Path(__file__).resolve()), "--held"]


def _lock_path() -> Path:
    from tasks_lib.cache_dir import cache_dir

    return cache_dir() / "tests-cli-bundles-ahead.lock"


@cache
def _clis() -> dict:
    """Every shipped CLI harness by name (the built-in ones and those declared as files)."""
    from harnesses.cli.cli_harness import CliHarness
    from harnesses.registry import builtin_names, get_harness

    return {n: h for n in builtin_names() if isinstance(h := get_harness(n), CliHarness)}


def wait_for_bundles(harnesses: list[str]) -> None:
    """Before a job that runs a shipped CLI: wait while the session's bundle build holds the lock."""
    if not set(harnesses) & set(_clis()) or not _lock_path().parent.is_dir():
        return
    with open(_lock_path(), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # the build's end (or its process's: the kernel drops the lock)
        fcntl.flock(fh, fcntl.LOCK_UN)


def main() -> int:
    _lock_path().parent.mkdir(parents=True, exist_ok=True)
    with open(_lock_path(), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if "--held" in sys.argv[1:] and select.select([sys.stdin], [], [], HOLD_SEC)[0] and not sys.stdin.readline():
            return 0  # the session ended before its server was up (the pipe closed without a go)
        failed = 0
        for name, harness in _clis().items():
            start = time.monotonic()
            try:
                harness.bundle()
            except Exception as exc:  # noqa: BLE001 - the job that needs it fails with its own reason
                print(f"{name}: {exc}", flush=True)
                failed += 1
            print(f"{name}: {time.monotonic() - start:.1f} s", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
