"""What preparing tbflow's supplied runner costs: cold (empty caches), warm, size, reproducibility.

    .venv/bin/python bench/supplied_runner_cost.py [WORK_DIR]

Builds the runner of the Docker test (3.13; pytest 8.4.1, pytest-json-ctrf 0.3.5, requests 2.32.4)
twice from empty caches (``TBFLOW_CACHE_DIR`` set to two fresh dirs under WORK_DIR, default a
temp dir), then reuses the first. Prints the phase times prepare_runner logs (debs, wheels,
build), the wall time of each call, the runner's size and file count, and whether both cold builds
gave the same digest. Why a script: the numbers depend on the network and the machine's load and
belong in bench/RESULTS.md, not in a test's assertion.
"""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from pathlib import Path

from tasks_lib.container.supplied_runner.prepare import PreparedRunner, prepare_runner

WHEELS = ["pytest==8.4.1", "pytest-json-ctrf==0.3.5", "requests==2.32.4"]


def timed(cache: Path) -> tuple[float, PreparedRunner]:
    os.environ["TBFLOW_CACHE_DIR"] = str(cache)
    t0 = time.monotonic()
    runner = prepare_runner("3.13", WHEELS)
    return time.monotonic() - t0, runner


def main() -> None:
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    work = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="runner-cost-"))
    cold, runner = timed(work / "cache-a")
    warm, _ = timed(work / "cache-a")
    cold2, runner2 = timed(work / "cache-b")
    files = [p for p in runner.path.rglob("*") if p.is_file() and not p.is_symlink()]
    size = sum(p.stat().st_size for p in files)
    print(f"cold {cold:.1f} s, cold again {cold2:.1f} s, warm {warm:.2f} s (manifest re-hashed)")
    print(f"runner: {size / 1e6:.1f} MB in {len(files)} files; digest {runner.digest}")
    print(f"same digest from two cold builds: {runner.digest == runner2.digest}")


if __name__ == "__main__":
    main()
