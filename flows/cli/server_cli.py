"""``tbflow server start|stop``: a Prefect server that outlives commands, for reuse (docs/local-server.md).

Every ``run``/``resume`` without ``PREFECT_API_URL`` starts a server of its own and stops it at its
end (flows/local_server/command_server.py): nothing to start by hand, ~5 s of CPU per command. To
skip that, ``start`` runs Prefect's own ``prefect server start --background`` on loopback with the
lean services of tbflow's server (flows/local_server/prefect_settings.py) and prints the
``PREFECT_API_URL`` to export; commands then use that URL as is (it is noted in
``PREFECT_HOME/tbflow-server.url``: a server of tbflow's, whose runs need no heartbeats). ``stop``
is ``prefect server stop`` (the server of this ``PREFECT_HOME``). Nothing here is sent to a running process: the
server is a child of ``start`` with the environment ``start`` was given.
"""

from __future__ import annotations

import subprocess
import sys

import typer

server_app = typer.Typer(help="A local Prefect server for many commands (PREFECT_API_URL).", no_args_is_help=True)


def _prefect(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "prefect", "server", *args], env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, check=False)


@server_app.command("start")
def start(port: int = typer.Option(4200, "--port", min=1, max=65535, help="Loopback port to listen on.")) -> None:
    """Start a Prefect server in the background on 127.0.0.1:PORT and wait until it answers; prints
    the PREFECT_API_URL to export so that tbflow commands use it."""
    import os

    from flows.local_server.command_server import STARTED_URL_NAME, prefect_home
    from flows.local_server.prefect_settings import DEFAULTS, LEAN_SERVICES
    from flows.local_server.server_health import wait_healthy

    env = {**DEFAULTS, **os.environ, **LEAN_SERVICES}
    env.pop("PREFECT_API_URL", None)
    done = _prefect("start", "--background", "--host", "127.0.0.1", "--port", str(port), env=env)
    if done.returncode != 0:
        typer.echo(f"tbflow: error: --port: {_last_line(done)}", err=True)
        raise typer.Exit(1)
    url = f"http://127.0.0.1:{port}/api"
    try:
        wait_healthy(url, 120, lambda: None, f"the Prefect server at {url} did not answer within 120 s")
    except RuntimeError as exc:
        typer.echo(f"tbflow: error: {exc}", err=True)
        raise typer.Exit(1) from None
    (prefect_home() / STARTED_URL_NAME).write_text(url + "\n")  # tbflow's: its runs need no heartbeats
    typer.echo(f"export PREFECT_API_URL={url}")


@server_app.command("stop")
def stop() -> None:
    """Stop the server `tbflow server start` (or `prefect server start --background`) started for this PREFECT_HOME."""
    from flows.local_server.command_server import STARTED_URL_NAME, prefect_home

    done = _prefect("stop")
    if done.returncode == 0:
        (prefect_home() / STARTED_URL_NAME).unlink(missing_ok=True)
    typer.echo(_last_line(done), err=done.returncode != 0)
    raise typer.Exit(0 if done.returncode == 0 else 1)


def _last_line(done: subprocess.CompletedProcess) -> str:
    lines = (done.stdout + done.stderr).strip().splitlines()
    return lines[-1].strip() if lines else f"prefect server exited {done.returncode}"


def register(app: typer.Typer) -> None:
    app.add_typer(server_app, name="server")
