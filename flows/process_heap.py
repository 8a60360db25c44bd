"""The long-lived objects of a tbflow process, moved out of the cyclic garbage collector's way.

A command that runs a job imports Prefect, pydantic, the Docker SDK and tbflow: ~150,000 objects
that live as long as the process. CPython's oldest-generation collection scans every one of them
each time it runs (~70 ms here), several times during a short job, and once more at exit.
``gc.freeze()`` moves what exists now to a permanent generation that collections skip; objects
made later are collected as before, and reference counting still frees everything it can.
Measured on a 3-trial ``tbflow run`` against a running server: 3.3 s -> 2.96 s wall and 2.2 ->
1.8 s of user CPU (bench/RESULTS.md, "Cold start"); the Prefect server process gains the same
on its own imports.

Called once per process, right after the big imports, when the heap holds little else: what is
frozen is never collected, so garbage cycles that exist at that moment (a few hundred objects
after the imports) stay; a second call would freeze a longer-running process's garbage too.

The collector's first threshold goes from 700 to ``YOUNG_THRESHOLD`` allocations at the same
time. A job's process and its Prefect server allocate short-lived objects by the million (pydantic
models, events, SQL statements): over a 445-trial job the default ran ~1,400 young collections in
the job process and ~2,100 in the server, and their older-generation collections with them,
1.3 s and 1.5 s of CPU (gc callbacks timing each). With 10,000: 80 and 117 young collections,
0.6 s in each process (bench/RESULTS.md, "Issue 28, last round"). A young collection then looks
at up to 10,000 objects, under a megabyte; reference counting still frees what it can at once,
so only garbage cycles wait longer.
"""

from __future__ import annotations

import gc

_frozen = False
#: allocations (less deallocations) between two young-generation collections; CPython's default is 700
YOUNG_THRESHOLD = 10_000


def freeze_imported() -> None:
    """Freeze the heap as it is now and space the young collections, the first time this process
    asks; later calls do nothing."""
    global _frozen
    if not _frozen:
        _frozen = True
        gc.freeze()
        _, older, oldest = gc.get_threshold()
        gc.set_threshold(YOUNG_THRESHOLD, older, oldest)
