"""Shared fixtures: a real Docker engine, the offline base image, Prefect in local mode.

Tests that need Docker fail (not skip) when it is missing: ``scripts/test.sh`` installs and
starts everything first, so a missing engine is a real problem to see.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from flows.embedded_prefect import configure_embedded_prefect  # noqa: E402

configure_embedded_prefect()
# One Prefect server per tbflow command, as before the warm server: tests of stopping and killing
# tbflow assert that nothing of a command outlives it. The warm server has its own tests
# (test_warm_server_*.py), which set this themselves.
os.environ.setdefault("TBFLOW_SERVER_IDLE_SEC", "0")

BASE_IMAGE = "tbflow/base:bookworm"


@pytest.fixture(autouse=True)
def _own_trial_history(tmp_path, monkeypatch):
    """Each test's jobs read and write their own duration history, never the user's nor another
    test's: the start order of a test's job must not depend on what ran before it (tests reuse
    task names such as ``a-quick``/``b-slow``, and a shared history reorders them)."""
    monkeypatch.setenv("TBFLOW_HISTORY", str(tmp_path / "trial-history.sqlite"))


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
    from flows.job_config import JobConfig
    from flows.job_flow import job_flow

    def _run(dataset: Path, **kw):
        kw.setdefault("jobs_dir", str(tmp_path / "jobs"))
        kw.setdefault("job_name", "job")
        return job_flow(**JobConfig(dataset=str(dataset), **kw).flow_parameters())

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
    from tasks_lib.container.sandbox import remove_container

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


def pytest_collection_modifyitems(config, items):
    """A test that uses the Docker fixtures is a Docker test whether or not it says so, so the
    quick lane (``-m "not docker"``) never starts one; tests that reach Docker another way (a
    ``tbflow`` subprocess, the Docker CLI) carry ``pytestmark = pytest.mark.docker`` themselves."""
    for item in items:
        if {"docker_ready", "run_job"} & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.docker)
