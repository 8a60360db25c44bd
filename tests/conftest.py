"""Shared fixtures: a real Docker engine, the offline base image, Prefect in local mode.

Tests that need Docker fail (not skip) when it is missing: ``scripts/test.sh`` installs and
starts everything first, so a missing engine is a real problem to see.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from flows.local_server.prefect_settings import configure_embedded_prefect  # noqa: E402


def _own_prefect_home_per_worker() -> None:
    """Under pytest-xdist each worker gets its own ``PREFECT_HOME`` below the session's, set before
    Prefect is imported: one SQLite database and shared server per worker, so the tbflow
    commands of two workers never wait on each other's database lock or share a server."""
    worker = os.environ.get("PYTEST_XDIST_WORKER")
    if worker:
        run = os.environ.get("PYTEST_XDIST_TESTRUNUID", "run")
        home = os.environ.get("PREFECT_HOME") or str(Path(tempfile.gettempdir()) / f"tbflow-test-prefect-{run}")
        own = Path(home) / worker
        own.mkdir(parents=True, exist_ok=True)
        os.environ["PREFECT_HOME"] = str(own)


_own_prefect_home_per_worker()

configure_embedded_prefect()

BASE_IMAGE = "tbflow/base:bookworm"


@pytest.fixture(autouse=True)
def _own_trial_history(tmp_path, monkeypatch):
    """Each test's jobs read and write their own duration history, never the user's nor another
    test's: the start order of a test's job must not depend on what ran before it (tests reuse
    task names such as ``a-quick``/``b-slow``, and a shared history reorders them)."""
    monkeypatch.setenv("TBFLOW_HISTORY", str(tmp_path / "trial-history.sqlite"))


@pytest.fixture
def per_command_server(monkeypatch):
    """A Prefect server of its own for every tbflow command this test starts (none left after it):
    the default of a user's command, without the worker's shared server."""
    monkeypatch.delenv("PREFECT_API_URL", raising=False)


@pytest.fixture(scope="session", autouse=True)
def _shared_server():
    """tbflow commands started by tests use one server per worker, as a user's commands do after
    ``tbflow server start`` (docs/local-server.md), instead of a Prefect start-up in every command.
    Tests of stopping and killing a command, which assert that nothing of it outlives it, ask for
    ``per_command_server``. The pytest process's own Prefect (imported at collection) keeps its
    ephemeral mode; the commands it starts read the URL from their environment."""
    import socket
    import subprocess

    if os.environ.get("PREFECT_API_URL"):
        yield
        return
    with socket.socket() as s:  # a free loopback port (a race with another process is very unlikely)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cli = [sys.executable, "-m", "flows.cli", "server"]
    done = subprocess.run([*cli, "start", "--port", str(port)], cwd=ROOT, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=180, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    os.environ["PREFECT_API_URL"] = done.stdout.strip().split("=", 1)[1]
    try:
        yield
    finally:
        os.environ.pop("PREFECT_API_URL", None)
        subprocess.run([*cli, "stop"], cwd=ROOT, capture_output=True, stdin=subprocess.DEVNULL, timeout=120,
                       check=False)


@pytest.fixture(scope="session", autouse=True)
def _prepared_ahead(request, _shared_server):
    """Once this worker's server is up: the held bundle build goes on, and Harbor's venv starts
    being made if a collected test needs it (tests/session_ahead.py)."""
    from harbor_check import INSTALL_AHEAD, USES_HARBOR
    from session_ahead import release_all, start_if_used

    release_all()
    start_if_used(INSTALL_AHEAD, {item.path for item in request.session.items}, USES_HARBOR,
                  request.config._tmp_path_factory.getbasetemp() / "harbor-venv-ahead.log", niceness=10)


@pytest.fixture(scope="session")
def docker_ready():
    from tasks_lib.container.docker_client import get_client, preflight

    preflight()
    get_client().images.get(BASE_IMAGE)  # raises ImageNotFound with a clear name
    return get_client()


@pytest.fixture(scope="session")
def prefect_local():
    """One temporary Prefect database and local server for the whole session."""
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=120):
        yield


@pytest.fixture
def run_job(docker_ready, prefect_local, tmp_path):
    """Run the real job flow on a dataset and return its ``JobResult``."""
    from task_factory import run_job_flow

    def _run(dataset: Path, **kw):
        return run_job_flow(dataset, kw.pop("jobs_dir", tmp_path / "jobs"), **kw)

    return _run


@pytest.fixture(autouse=True)
def _no_leftover_containers(request, tmp_path_factory):
    """Every test must leave no trial container of its own behind.

    Only containers of jobs under this session's temporary dirs count (label ``tbflow.job_dir``):
    a benchmark the user runs on the same machine, or another test session, is never touched.
    """
    yield
    if "docker_ready" not in request.fixturenames and "run_job" not in request.fixturenames:
        return
    from session_cleanup import own_containers
    from tasks_lib.container.container_removal import remove_container

    left = own_containers(str(tmp_path_factory.getbasetemp()))
    names = [c["Names"][0].lstrip("/") for c in left]
    for c in left:
        remove_container(c["Id"])
    assert not names, f"trial containers left behind: {names}"


@pytest.fixture(scope="session", autouse=True)
def _remove_test_images(tmp_path_factory):
    """Tests build task images with unique contents (so they really build); remove the ones this
    session built, so repeated runs on one machine do not pile up images.

    Only images whose build context (label ``tbflow.context``) lies under this session's temporary
    dirs count: images of the examples, of another session or of a user's job are never touched.
    """
    yield
    try:
        from session_cleanup import own_images
        from tasks_lib.container.docker_client import get_client

        api = get_client().api
        for ref in own_images(api, str(tmp_path_factory.getbasetemp())):
            try:
                api.remove_image(ref, noprune=False)
            except Exception:  # noqa: BLE001 - in use or gone: leave it
                pass
    except Exception:  # noqa: BLE001 - housekeeping must never fail the suite
        pass


#: session fixtures serving a shared job -> the xdist group of the tests that use it
SHARED_JOB_GROUPS = {"happy_cli_job": "happy-cli-job"}


@pytest.fixture(scope="session")
def happy_cli_job(docker_ready, prefect_local, tmp_path_factory):
    """The happy real-CLI job of tests/shared_cli_jobs.py, run once per session (worker)."""
    from shared_cli_jobs import run_happy_job

    return run_happy_job(tmp_path_factory.mktemp("happy-cli-job"))


@pytest.hookimpl(tryfirst=True)  # before pytest-xdist reads the groups
def pytest_collection_modifyitems(config, items):
    """A test that uses the Docker fixtures is a Docker test whether or not it says so, so the
    quick lane (``-m "not docker"``) never starts one; tests that reach Docker another way (a
    ``tbflow`` subprocess, the Docker CLI) carry ``pytestmark = pytest.mark.docker`` themselves.
    Tests of one shared job or module-scoped fixture go to one xdist group, so it runs once, and
    the longest start first (tests/xdist_schedule.py)."""
    from xdist_schedule import module_fixture_group, start_rank

    for item in items:
        names = set(getattr(item, "fixturenames", ()))
        if {"docker_ready", "run_job"} & names:
            item.add_marker(pytest.mark.docker)
        for fixture in sorted(names & SHARED_JOB_GROUPS.keys()):
            item.add_marker(pytest.mark.xdist_group(SHARED_JOB_GROUPS[fixture]))
        if not any(True for _ in item.iter_markers("xdist_group")) and (group := module_fixture_group(item)):
            item.add_marker(pytest.mark.xdist_group(group))
    items.sort(key=lambda item: start_rank(item.nodeid.split("::")[0]))


def pytest_collection_finish(session):
    """The CLIs' bundle build takes its lock now, if a collected test runs a CLI (tests/session_ahead.py)."""
    from cli_bundles_ahead import COMMAND, USES_CLIS
    from session_ahead import start_if_used

    start_if_used(COMMAND, {item.path for item in session.items}, USES_CLIS,
                  session.config._tmp_path_factory.getbasetemp() / "cli-bundles-ahead.log", held=True)


def pytest_unconfigure(config):
    from session_ahead import stop_all

    stop_all()
