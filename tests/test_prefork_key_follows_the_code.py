"""A prefork (flows/local_server/prefork_main.py) imported the code and Prefect's settings once: a command must never
hand its job to one that imported other code or another configuration. Its key changes when a
source file changes, when a ``PREFECT_*`` variable changes and with ``PREFECT_HOME``."""

import os

from flows.local_server import prefork_client
def _tree(root):
    for package in ("flows", "tasks_lib", "harnesses"):
        (root / package).mkdir(parents=True)
        (root / package / "mod.py").write_text("X = 1\n")


def test_key_changes_when_a_source_file_changes(tmp_path, monkeypatch):
    _tree(tmp_path)
    monkeypatch.setattr(prefork_client, "ROOT", tmp_path)
    before = prefork_client.prefork_key()
    assert prefork_client.prefork_key() == before
    target = tmp_path / "tasks_lib" / "mod.py"
    st = target.stat()
    os.utime(target, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))
    assert prefork_client.prefork_key() != before


def test_key_changes_with_prefect_settings_and_home(tmp_path, monkeypatch):
    _tree(tmp_path)
    monkeypatch.setattr(prefork_client, "ROOT", tmp_path)
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "a"))
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "WARNING")
    base = prefork_client.prefork_key()
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "DEBUG")
    assert prefork_client.prefork_key() != base
    monkeypatch.setenv("PREFECT_LOGGING_LEVEL", "WARNING")
    assert prefork_client.prefork_key() == base
    monkeypatch.setenv("PREFECT_HOME", str(tmp_path / "b"))
    assert prefork_client.prefork_key() != base
