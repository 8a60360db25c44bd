"""Over a 445-trial job CPython's default collector (a young collection every 700 allocations) ran
~1,400 young and 11 full collections in the job process and ~2,100 and 18 in its Prefect server:
2.8 s of CPU, ~6 ms a trial. ``flows.process_heap.freeze_imported`` spaces the young collections
to every 10,000 allocations as it freezes the imported heap; this pins both in a fresh process."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_freezing_the_imported_heap_also_spaces_young_collections():
    code = ("import gc; from flows.process_heap import YOUNG_THRESHOLD, freeze_imported\n"
            "before = gc.get_threshold(); freeze_imported(); after = gc.get_threshold()\n"
            "assert gc.get_freeze_count() > 1000, gc.get_freeze_count()\n"
            "assert after == (YOUNG_THRESHOLD, *before[1:]), (before, after)\n"
            "freeze_imported(); assert gc.get_threshold() == after\n"
            "print(after[0])")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) > 700
