"""``tbflow server status|stop``: see and stop the warm local Prefect server (flows/server_daemon.py)
that ``run`` and ``resume`` leave running for the next command (README.md, "Prefect")."""

from __future__ import annotations

import json

import typer

server_app = typer.Typer(help="The warm local Prefect server that tbflow commands share.", no_args_is_help=True)


@server_app.command("status")
def status() -> None:
    """Show the warm server of this PREFECT_HOME (pid, API URL, attached commands); exit 1 if none runs."""
    from flows import shared_server

    info = shared_server.status()
    if info is None:
        typer.echo(f"no tbflow server runs for {shared_server.prefect_home()}")
        raise typer.Exit(1)
    typer.echo(json.dumps(info, indent=1))


@server_app.command("stop")
def stop() -> None:
    """Stop the warm server now, or as soon as the commands attached to it have finished."""
    from flows import shared_server

    from flows.cli import handoff

    handoff.request_stop()  # the process that runs commands for this server's configuration, too
    attached = shared_server.request_stop()
    if attached is None:
        typer.echo(f"no tbflow server runs for {shared_server.prefect_home()}")
    elif attached:
        typer.echo(f"the tbflow server stops when its {attached} running command(s) finish")
    else:
        typer.echo("the tbflow server is stopping")


def register(app: typer.Typer) -> None:
    app.add_typer(server_app, name="server")
