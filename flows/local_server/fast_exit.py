"""Leave the process without the interpreter's final teardown once everything is written.

After a job, freeing the modules and objects Prefect, pydantic and the Docker SDK loaded took
~0.9 s of the command's wall time here (bench/RESULTS.md, "Cold start"), after every ``atexit``
handler had run: nothing is written in that time, only memory handed back that the kernel takes
back anyway. So the CLI runs the ``atexit`` handlers itself (Prefect's event and log workers
drain there, the server attachment says goodbye there), flushes its streams and calls
``os._exit``. It does so only when no other non-daemon thread is alive, i.e. when a normal exit
would not have waited for anything either; otherwise it leaves the exit to Python.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading


def exit_now(exc: SystemExit) -> None:
    """Exit at once with ``exc``'s code, or return (the caller re-raises) when that is not safe."""
    if exc.code is not None and not isinstance(exc.code, int):  # a message to print: Python's own exit does that
        return
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        return
    finish(exit_code(exc))


def exit_code(exc: SystemExit, print_message: bool = False) -> int:
    """The process exit code Python gives ``exc`` (a message is printed to stderr and gives 1)."""
    if exc.code is None:
        return 0
    if isinstance(exc.code, int):
        return exc.code
    if print_message:
        print(exc.code, file=sys.stderr)
    return 1


def finish(code: int) -> None:
    """Run the ``atexit`` handlers, flush stdout and stderr, and leave with ``code`` (no teardown)."""
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # the terminal is gone; Python's exit would not print either
            pass
    os._exit(code)
