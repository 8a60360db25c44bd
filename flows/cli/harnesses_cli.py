"""``tbflow harnesses``: what ``--harness NAME`` can name here, with kind, version and origin;
``tbflow harnesses pin PATH``: the sha256 a local bundle is pinned by.

Built-ins first, then every installed ``tbflow.harnesses`` entry point, each loaded, so a plug-in
that fails to import is listed with its problem instead of surfacing in the middle of a job.
Import paths (``module:Class``, ``path/file.py:Class``) are not listed: any importable one works.

Why ``pin``: a local bundle (``[bundle] dir``, ``tarball`` or ``wheel``) must be pinned again after
every edit, and its digest (a tree digest for a directory) cannot be made with ``sha256sum``.
"""

from __future__ import annotations

from pathlib import Path

import typer

harnesses_app = typer.Typer(invoke_without_command=True, rich_markup_mode=None,
                            help="List the harnesses --harness can name; `pin PATH` prints a local bundle's pin.")


@harnesses_app.callback()
def harnesses(ctx: typer.Context) -> None:
    """List the harnesses --harness can name: built-ins and installed plug-ins (kind, version, origin)."""
    if ctx.invoked_subcommand is not None:
        return
    from harnesses.registry import ENTRY_POINT_GROUP, OTHER_FORMS, listings

    rows = listings()
    head = ("NAME", "KIND", "VERSION", "ORIGIN")
    table = [head, *[(r.name, r.kind, r.version, r.origin + (f" ({r.problem})" if r.problem else "")) for r in rows]]
    widths = [max(len(row[i]) for row in table) for i in range(3)]
    for row in table:
        typer.echo("  ".join(cell.ljust(w) for cell, w in zip(row[:3], widths, strict=True)) + "  " + row[3])
    typer.echo(f"\nAlso: --harness {OTHER_FORMS}; plug-ins install an entry point in group "
               f"{ENTRY_POINT_GROUP} (docs/write-a-harness.md). `tbflow harnesses pin PATH`: a local bundle's pin.")


@harnesses_app.command("pin")
def pin(path: str = typer.Argument(..., metavar="PATH",
                                   help="A harness file (x.toml: its [bundle]) or a bundle dir, tarball or wheel.")) -> None:
    """Print the `sha256 = "..."` line that pins a local bundle; for a harness file, also whether
    its pin still matches (exit 1 when it does not)."""
    from harnesses.bundles.npm_bundle import PackageFetchError, UnsafePackageError
    from harnesses.declared.local_bundle import kind_of, local_digest

    target = Path(path)
    if not target.exists():
        _refuse(path, "no such file or directory")
    spec_harness = _declared(target) if target.suffix == ".toml" else None
    kind, source = spec_harness.local_source() if spec_harness is not None else (kind_of(target), target.resolve())
    try:
        digest = local_digest(kind, source)
    except (PackageFetchError, UnsafePackageError) as exc:
        _refuse(path, str(exc))
    typer.echo(f'sha256 = "{digest}"')
    if spec_harness is None:
        typer.echo(f"tbflow: {kind} {source}", err=True)
        return
    mismatch = spec_harness.pin_mismatch(digest)
    typer.echo(f"tbflow: {mismatch}" if mismatch else f"tbflow: {path}: [bundle] sha256 matches the {kind} {source}",
               err=True)
    if mismatch:
        raise typer.Exit(1)


def _declared(path: Path):
    """The harness class of a harness file with a local bundle (exit 2 naming the file otherwise)."""
    from harnesses.declared.declared_harness import declared_class
    from tasks_lib.errors import InputError

    try:
        cls = declared_class(path, str(path))
    except InputError as exc:
        _refuse("PATH", exc.message)
    if cls.spec.bundle.npm is not None:
        _refuse(str(path), "[bundle] is an npm package, pinned by its integrity (npm view PKG@VERSION dist.integrity)")
    return cls()


def _refuse(where: str, message: str) -> None:
    typer.echo(f"tbflow: error: {where}: {message}", err=True)
    raise typer.Exit(2)


def register(app: typer.Typer) -> None:
    app.add_typer(harnesses_app, name="harnesses")
