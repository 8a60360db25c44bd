"""tbflow's own verifier runner: CPython 3.13 + pinned wheels, hardened, for a read-only mount.

``prepare_runner(python, wheels)`` (``prepare.py``) returns a ``PreparedRunner`` or raises
``RunnerUnavailable``. The modules, in build order: ``debs`` (Debian trixie packages, pinned),
``wheels`` (PyPI wheels, locked by sha256), ``assemble`` (copy, closure, bytecode), ``harden``
(what keeps the container's files from running in the runner), ``manifest`` (the digest).
"""
