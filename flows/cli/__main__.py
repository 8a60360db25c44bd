"""``python -m flows.cli``: the ``tbflow`` command (flows/cli/entry.py)."""

from flows.cli.entry import main

main()
