"""One Docker client per process, and the preflight that turns "no engine" into one clear line.

Without the preflight a stopped daemon surfaces as a urllib3 stack trace from deep inside the
first trial; with it the user reads what to start before anything is written.
"""

from __future__ import annotations

import os
import threading

import docker
from docker.errors import DockerException

from tasks_lib.errors import DockerUnavailableError

_lock = threading.Lock()
_client: docker.DockerClient | None = None

#: Labels every tbflow container carries, so cleanup only ever touches what tbflow started.
LABEL_ROOT = "tbflow"
LABEL_JOB = "tbflow.job"
LABEL_TRIAL = "tbflow.trial"
#: the Prefect flow run that started the container, so a cancellation hook can find it
LABEL_FLOW_RUN = "tbflow.flow_run"
#: the absolute job directory, so a tool (or a test session) can tell whose container it is
LABEL_JOB_DIR = "tbflow.job_dir"


def get_client() -> docker.DockerClient:
    """The process-wide client (the SDK client is thread-safe for our use: one pool per client)."""
    global _client
    with _lock:
        if _client is None:
            try:
                _client = docker.from_env(timeout=300, max_pool_size=64)
            except DockerException as exc:
                raise DockerUnavailableError(_unavailable_message(exc)) from exc
        return _client


def preflight() -> str:
    """Check the engine answers; return its version. Raise ``DockerUnavailableError`` otherwise."""
    try:
        client = get_client()
        client.ping()
        return str(client.version().get("Version", "unknown"))
    except DockerUnavailableError:
        raise
    except DockerException as exc:
        raise DockerUnavailableError(_unavailable_message(exc)) from exc
    except Exception as exc:  # requests/urllib3 connection errors are not DockerExceptions
        raise DockerUnavailableError(_unavailable_message(exc)) from exc


def _unavailable_message(exc: BaseException) -> str:
    host = os.environ.get("DOCKER_HOST", "unix:///var/run/docker.sock")
    return (
        f"cannot reach the Docker engine at {host} ({type(exc).__name__}). "
        "Start it (e.g. `scripts/setup.sh`, which installs and starts dockerd, or `sudo dockerd &`), "
        "or point DOCKER_HOST at a running engine."
    )
