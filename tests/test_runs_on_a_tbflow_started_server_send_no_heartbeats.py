"""Prefect's flow-run heartbeats cost ~0.5 s at the end of a command (its heartbeat thread is
joined on exit) and serve only a server's zombie automation. tbflow's servers have none: a
command's own, and the one ``tbflow server start`` runs (its URL noted in
``PREFECT_HOME/tbflow-server.url``). Any other ``PREFECT_API_URL`` keeps Prefect's heartbeats.
"""

import contextlib

import prefect.settings as settings

from flows.local_server import command_server
from flows.local_server.prefect_settings import no_heartbeats_on

URL = "http://127.0.0.1:4399/api"


def _heartbeat_inside(server) -> object:
    with no_heartbeats_on(server):
        return settings.PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value()


def test_heartbeats_off_on_the_server_tbflow_server_start_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    (tmp_path / command_server.STARTED_URL_NAME).write_text(URL + "\n")
    server = command_server.CommandServer(None, URL, own_server=False)  # type: ignore[arg-type]
    assert server.tbflows
    assert _heartbeat_inside(server) is None


def test_heartbeats_kept_on_any_other_configured_server(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    (tmp_path / command_server.STARTED_URL_NAME).write_text("http://127.0.0.1:4200/api\n")
    server = command_server.CommandServer(None, URL, own_server=False)  # type: ignore[arg-type]
    assert not server.tbflows
    assert isinstance(no_heartbeats_on(server), contextlib.nullcontext)
    assert _heartbeat_inside(server) == settings.PREFECT_FLOWS_HEARTBEAT_FREQUENCY.value()


def test_heartbeats_off_on_the_commands_own_server(tmp_path, monkeypatch):
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path))
    server = command_server.CommandServer(None, URL, own_server=True)  # type: ignore[arg-type]
    assert _heartbeat_inside(server) is None
