"""The ``tbflow`` command (``python -m flows.cli`` is the same): a ``run`` or ``resume`` is handed to
the prefork (flows/local_server/prefork_client.py) before the CLI itself is imported, which takes ~0.4 s here
(Typer and the record models); everything else goes to flows/cli/main.py."""

from __future__ import annotations

import sys


def main() -> None:
    from flows.local_server.prefork_client import try_handoff

    code = try_handoff(sys.argv)
    if code is not None:
        raise SystemExit(code)
    from flows.cli.main import main as cli_main

    cli_main()
