"""``tbflow server status|stop``: see and stop the warm local Prefect server (flows/local_server/warm_server_main.py)
that ``run`` and ``resume`` leave running for the next command (docs/prefect.md).

Both act only on this tbflow's server: the one of this ``PREFECT_HOME`` whose version (tbflow,
Prefect and the interpreter, i.e. this checkout's venv) is this command's. Another checkout that
shares the ``PREFECT_HOME`` reaches the same server socket; its ``status`` says whose the server
is and exits 1, and its ``stop`` leaves it running unless ``--any`` is given. When another user or
program holds the server's socket name (flows/local_server/socket_peer.py), both say so and exit 1.
"""

from __future__ import annotations

import json

import typer

server_app = typer.Typer(help="The warm local Prefect server that tbflow commands share.", no_args_is_help=True)


def _others(info: dict) -> str | None:
    """Why ``info`` (a server's status) is not this tbflow's server, or None when it is."""
    from flows.local_server.warm_server_main import daemon_version

    theirs, ours = info.get("version"), daemon_version()
    if theirs == ours:
        return None
    return f"the tbflow server of {_home()} (pid {info.get('pid')}) is another tbflow's: {theirs}, not {ours}"


def _home() -> str:
    from flows.local_server import warm_server
    return str(warm_server.prefect_home())


def _status() -> dict | None:
    from flows.local_server import warm_server
    from flows.local_server.socket_peer import UntrustedPeer

    try:
        return warm_server.status()
    except UntrustedPeer as exc:
        typer.echo(f"tbflow: error: {exc}", err=True)
        raise typer.Exit(1) from None


@server_app.command("status")
def status() -> None:
    """Show this tbflow's warm server of this PREFECT_HOME (pid, API URL, attached commands); exit 1 if none runs."""
    info = _status()
    if info is None:
        typer.echo(f"no tbflow server runs for {_home()}")
        raise typer.Exit(1)
    other = _others(info)
    if other is not None:
        typer.echo(f"no server of this tbflow runs for {_home()}; {other}")
        raise typer.Exit(1)
    typer.echo(json.dumps(info, indent=1))


@server_app.command("stop")
def stop(any_server: bool = typer.Option(False, "--any", help="Also stop a server another tbflow (another "
                                         "checkout or venv) runs for this PREFECT_HOME.")) -> None:
    """Stop this tbflow's warm server now, or as soon as the commands attached to it have finished."""
    from flows.local_server import warm_server

    info = _status()
    other = _others(info) if info is not None else None
    if other is not None and not any_server:
        typer.echo(f"left running: {other} (stop it with `tbflow server stop --any`, or from that checkout)")
        raise typer.Exit(1)
    attached = warm_server.request_stop() if info is not None else None
    if attached is None:
        typer.echo(f"no tbflow server runs for {_home()}")
    elif attached:
        typer.echo(f"the tbflow server stops when its {attached} running command(s) finish")
    else:
        typer.echo("the tbflow server is stopping")


def register(app: typer.Typer) -> None:
    app.add_typer(server_app, name="server")
