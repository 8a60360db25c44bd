"""Slow one-time preparations the session starts in the background as it begins.

CI starts from empty caches (.ci/run), so Harbor's venv (tests/harbor_check.py) and the agent
CLIs' bundles (tests/cli_bundles_ahead.py) are made during the suite. Made inside the first test
that asked, that test's worker waited for all of it while the session's servers were already up,
and tests on other workers waited too (Harbor's lock) or made the same thing again (the bundle
cache has no lock). The bundle build takes its lock when collection ends and starts once this
worker's Prefect server is up (every worker starts its servers together, and they must be up
within 180 s); Harbor's install starts then too, at a lower priority (its tests come later).

One process per session starts it (xdist's ``gw0``, else the only one); the tests still do what
they did (run the script, prepare their bundles), which then finds the work done or waits for it.
A preparation still running when that process ends (a run stopped early) is ended with its
children: each of them leaves nothing half-made that the next run would take as done.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
from collections.abc import Iterable
from pathlib import Path

_started: list[subprocess.Popen] = []


def start_if_used(command: list[str], test_files: Iterable[Path], uses: re.Pattern[str], log: Path,
                  niceness: int = 0, held: bool = False) -> bool:
    """Start ``command`` in the background at ``niceness``, its output to ``log``, when a collected
    test file matches ``uses``. A ``held`` command gets a pipe on stdin and waits for
    ``release_all`` (it takes its lock first, so tests wait for it rather than racing it)."""
    if os.environ.get("PYTEST_XDIST_WORKER", "gw0") != "gw0":
        return False
    here = Path(__file__).parent
    if not any(f.parent == here and uses.search(f.read_text(encoding="utf-8")) for f in set(test_files)):
        return False
    with open(log, "ab") as out:
        _started.append(subprocess.Popen(["nice", "-n", str(niceness), *command], stdout=out,
                                         stdin=subprocess.PIPE if held else subprocess.DEVNULL,
                                         stderr=subprocess.STDOUT, start_new_session=True))
    return True


def release_all() -> None:
    """Let the held commands go on (once this worker's Prefect server is up)."""
    for proc in _started:
        if proc.stdin is not None and not proc.stdin.closed:
            try:
                proc.stdin.write(b"go\n")
                proc.stdin.close()
            except BrokenPipeError:  # it ended already: its log says why
                pass


def stop_all() -> None:
    """End what is still running (its whole process group: the script and its pip or npm)."""
    for proc in _started:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=30)
