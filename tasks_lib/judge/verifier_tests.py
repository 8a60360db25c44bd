"""Where the verifier's own tests are, and what their shells do: what a runner file can steer
depends on it (pure but for reading the task's tests on the host; ``runner_use`` asks).

* **Aliases.** bash runs test.sh as a script, with ``expand_aliases`` off, so an ``alias`` in a
  file test.sh sources (``~/.bashrc``) changes no command it runs, unless the task's tests turn the
  option on or start a shell that expands aliases (interactive, POSIX mode, dash). The tests are
  tbflow's copy on the host, never the agent's.
* **conftest.py.** pytest loads a ``conftest.py`` for the tests collected at or below its
  directory. One outside every directory that holds tests not the agent's (``/tests``, whose only
  ancestor is ``/``; a copy test.sh wrote while it ran; anything the image put there) is loaded
  only where pytest collects the agent's own files (its project's tests, run by the task's tests to
  check the project still passes, or collected next to them): there the agent's test modules run
  the same code at import, so such a conftest gives the agent nothing its own files do not. It is
  the project's, not the runner's. Bytecode and pytest's cache that test.sh wrote are no tests.
"""

from __future__ import annotations

import re
from pathlib import Path

from tasks_lib.judge.runner_roles import bytecode_source

#: what in the task's tests makes a shell expand the aliases a sourced file defines: the option, an
#: interactive bash, POSIX mode (bash's, or dash, which always expands them) sourcing a startup file
ALIASES_EXPAND = re.compile(rb"expand_aliases|posix|POSIXLY_CORRECT|\bbash\b[\s'\",]{1,8}-[a-zA-Z]*i|--rcfile|--init-file|"
                            rb"\b(sh|dash)\b[^\n]*(bashrc|profile)")
#: bytes of the task's tests read for that at most; more: the aliases count (fail closed)
TESTS_READ_LIMIT = 4 * 2**20
#: where test.sh's tools write what is not a test: bytecode, pytest's cache
NOT_TESTS = re.compile(r"/(__pycache__|\.pytest_cache)/")
TESTS_DIR = "/tests"


def aliases_inert_for(tests_dir: Path | None) -> bool:
    """Whether no shell the task's tests start expands an alias (unknown: they may)."""
    if tests_dir is None:
        return False
    budget = TESTS_READ_LIMIT
    try:
        for path in sorted(p for p in tests_dir.rglob("*") if p.is_file() and not p.is_symlink()):
            data = path.read_bytes()[:budget + 1]
            budget -= len(data)
            if budget < 0 or ALIASES_EXPAND.search(data):
                return False
    except OSError:
        return False
    return True


def is_conftest(path: str) -> bool:
    """A ``conftest.py`` or the bytecode of one."""
    return (bytecode_source(path) or path).rsplit("/", 1)[-1] == "conftest.py"


def conftest_dir(path: str) -> str:
    """The directory of the conftest at ``path``, or of the one whose bytecode ``path`` is."""
    return (bytecode_source(path) or path).rsplit("/", 1)[0] or "/"


def conftest_reaches_the_verifiers_tests(path: str, written: list[str] | None, image_has_files: bool = False) -> bool:
    """Whether the conftest at ``path`` (or whose bytecode ``path`` is) sits in an ancestor of
    ``/tests``, of a file test.sh wrote while it ran (``written``: paths new or changed in the
    writable layer since before the verifier; None when that is unknown: it may), or in a
    directory where the image has files (``image_has_files``: tests the task shipped, perhaps)."""
    home = conftest_dir(path).rstrip("/") + "/"
    if written is None or image_has_files or (TESTS_DIR + "/").startswith(home):
        return True
    return any(p.startswith(home) and not NOT_TESTS.search(p) for p in written)
