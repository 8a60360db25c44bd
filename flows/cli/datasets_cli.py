"""``tbflow datasets list|download|verify``: what a registry offers, what is cached, and checks.

``list`` reads the registry (one line naming it when it cannot) and the cache; ``download``
resolves a name exactly as ``tbflow run`` does (fetch once, verify) and exports it as a plain
directory that runs offline (tasks_lib/dataset/exports.py); ``verify`` re-hashes cached entries
and exits 1 naming every file that changed. Exit 2 on bad input, as everywhere.
"""

from __future__ import annotations

from pathlib import Path
from typing import NoReturn, Optional

import typer

REGISTRY_HELP = ("Where dataset names are looked up: a Harbor registry file (path or URL), a store directory, "
                 "or a .git URL (for ORG/NAME@REF). Default: $TBFLOW_REGISTRY, else Harbor's on GitHub.")
UNPINNED_HELP = "Accept tasks pinned to a branch or tag, not a commit SHA (the commit is recorded)."

datasets_app = typer.Typer(help="Datasets by name: list the registry and the cache, download, verify.",
                           no_args_is_help=True)


def fail(where: str, message: str) -> NoReturn:
    typer.echo(f"tbflow: error: {where}: {message}", err=True)
    raise typer.Exit(2)


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


@datasets_app.command("list")
def list_(
    registry: Optional[str] = typer.Option(None, "--registry", metavar="PATH|URL", help=REGISTRY_HELP),
    cached_only: bool = typer.Option(False, "--cached", help="Only what is in the cache (no registry read)."),
) -> None:
    """List the registry's datasets (versions, task counts) and the cached ones (sizes)."""
    from tasks_lib.dataset.cache import cached_entries, datasets_root, tree_size
    from tasks_lib.dataset.names import version_order
    from tasks_lib.dataset.registry import read_registry, registry_location
    from tasks_lib.errors import InputError

    unreadable = None
    if not cached_only:
        location = registry_location(registry)
        try:
            datasets = read_registry(location)
        except InputError as exc:  # offline: the cache is still worth listing; exit 2 after it
            unreadable = exc
            datasets = []
        if unreadable is None:
            typer.echo(f"registry {location}:")
        counts = {(d.name, d.version): len(d.tasks) for d in datasets}
        for name in sorted({d.name for d in datasets}):
            versions = version_order([v for n, v in counts if n == name])
            typer.echo(f"  {name}  " + ", ".join(f"{v} ({counts[name, v]} tasks)" for v in versions))
    entries = cached_entries()
    typer.echo(f"cached in {datasets_root()}:" + ("" if entries else " nothing"))
    for entry, manifest in entries:
        src = manifest.source
        typer.echo(f"  {src.pinned_spec}  {len(src.tasks)} tasks  {_size(tree_size(entry))}  from {src.source}"
                   + (f" @ {src.commit[:12]}" if src.commit else "") + f"  ({entry.name})")
    if unreadable is not None:
        fail(unreadable.where, unreadable.message)


@datasets_app.command("download")
def download(
    dataset: str = typer.Argument(..., help="NAME@VERSION, NAME (head, else the highest) or ORG/NAME@REF."),
    to: Path = typer.Option(..., "--to", help="A new or empty directory to write the tasks to."),
    registry: Optional[str] = typer.Option(None, "--registry", metavar="PATH|URL", help=REGISTRY_HELP),
    allow_unpinned: bool = typer.Option(False, "--allow-unpinned", help=UNPINNED_HELP),
) -> None:
    """Fetch a dataset into the cache (once, verified) and export it to DIR: `tbflow run DIR` then runs
    it offline, verified against its digests and recorded under its name."""
    from tasks_lib.dataset.exports import export_dataset
    from tasks_lib.dataset.names import parse_dataset
    from tasks_lib.dataset.resolve import resolve_dataset
    from tasks_lib.errors import InputError

    if parse_dataset(dataset).kind == "dir":
        fail("DATASET", f"{dataset}: not a dataset name (NAME@VERSION or ORG/NAME@REF)")
    try:
        resolved = resolve_dataset(dataset, registry, allow_unpinned)
        src = resolved.source
        assert src is not None  # a name always resolves to a source
        out = export_dataset(resolved.path, src, to)
    except InputError as exc:
        fail(exc.where, exc.message)
    for note in resolved.notes:
        typer.echo(f"tbflow: {note}", err=True)
    typer.echo(f"{src.pinned_spec}: {len(src.tasks)} tasks, digest {src.digest}, written to {out}")


@datasets_app.command("verify")
def verify(
    dataset: Optional[str] = typer.Argument(None, help="Only the cached versions of this NAME or NAME@VERSION."),
) -> None:
    """Recompute every cached task's digest; exit 1 naming each file that changed (`run` fetches it again)."""
    from tasks_lib.dataset.cache import cached_entries, verify_entry

    entries = [(e, m) for e, m in cached_entries()
               if dataset is None or dataset in (m.source.name, m.source.pinned_spec)]
    if dataset is not None and not entries:
        have = sorted({m.source.pinned_spec for _e, m in cached_entries()})
        fail("DATASET", f"{dataset}: not in the cache; cached: {', '.join(have) or 'nothing'}")
    bad = 0
    for entry, manifest in entries:
        problems = verify_entry(entry, manifest)
        label = f"{manifest.source.pinned_spec} ({entry.name})"
        if problems:
            bad += 1
            typer.echo(f"CHANGED {label}: " + "; ".join(problems))
        else:
            typer.echo(f"ok {label}: {len(manifest.source.tasks)} tasks, digest {manifest.source.digest}")
    if bad:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    """Add ``datasets`` to the main app (once: tests register it too)."""
    if all(g.typer_instance is not datasets_app for g in app.registered_groups):
        app.add_typer(datasets_app, name="datasets")
