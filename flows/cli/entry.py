"""The ``tbflow`` command (``python -m flows.cli`` is the same): flows/cli/main.py."""

from __future__ import annotations


def main() -> None:
    from flows.cli.main import main as cli_main

    cli_main()
