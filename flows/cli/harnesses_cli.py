"""``tbflow harnesses``: what ``--harness NAME`` can name here, with kind, version and origin.

Built-ins first, then every installed ``tbflow.harnesses`` entry point, each loaded, so a plug-in
that fails to import is listed with its problem instead of surfacing in the middle of a job.
Import paths (``module:Class``, ``path/file.py:Class``) are not listed: any importable one works.
"""

from __future__ import annotations

import typer


def harnesses() -> None:
    """List the harnesses --harness can name: built-ins and installed plug-ins (kind, version, origin)."""
    from harnesses.registry import ENTRY_POINT_GROUP, listings

    rows = listings()
    head = ("NAME", "KIND", "VERSION", "ORIGIN")
    table = [head, *[(r.name, r.kind, r.version, r.origin + (f" ({r.problem})" if r.problem else "")) for r in rows]]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    for row in table:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
    typer.echo(f"\nAlso: --harness module:Class or path/file.py:Class; plug-ins install an entry point in group "
               f"{ENTRY_POINT_GROUP} (docs/write-a-harness.md).")


def register(app: typer.Typer) -> None:
    app.command("harnesses")(harnesses)
