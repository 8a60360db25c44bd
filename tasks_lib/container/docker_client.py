"""One Docker client per process, and the preflight that turns "no engine" into one clear line.

Without the preflight a stopped daemon surfaces as a urllib3 stack trace from deep inside the
first trial; with it the user reads what to start before anything is written.
"""

from __future__ import annotations

import os
import threading
import time

import docker
import requests
from docker.errors import DockerException
from docker.transport import UnixHTTPAdapter

from tasks_lib import interrupts
from tasks_lib.errors import DockerUnavailableError

#: What a Docker call raises when the engine fails *or does not answer at all*: the SDK lets
#: requests' connection errors through, which are not ``DockerException``s.
DOCKER_ERRORS = (DockerException, requests.exceptions.RequestException)
#: How long trials wait for an engine that stopped answering (e.g. while it restarts).
ENGINE_WAIT_SEC = 120.0

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
#: on images tbflow built: the absolute build context, so a test session can tell its own images
LABEL_CONTEXT = "tbflow.context"


def get_client() -> docker.DockerClient:
    """The process-wide client (the SDK client is thread-safe for our use: one pool per client)."""
    global _client
    with _lock:
        if _client is None:
            try:
                _client = _one_pool_per_socket(docker.from_env(timeout=300, max_pool_size=64))
            except DockerException as exc:
                raise DockerUnavailableError(_unavailable_message(exc)) from exc
        return _client


def _one_pool_per_socket(client: docker.DockerClient) -> docker.DockerClient:
    """On a local socket: no proxy variables read at every call (requests looks them up per
    request; a unix socket is never proxied): 0.72 -> 0.62 ms of client CPU a call
    (bench/docker_call_cost.py). A TCP or SSH engine is left as the SDK sets it up.

    docker-py's pools stay as they are (one per URL, so nearly every call of a trial opens a
    connection): one shared pool measured 0.42 ms a call, but a clean-clone run with it hung a
    Docker call for the client's whole 300-s timeout once, and a hijacked exec stream on a shared
    pool is not worth that risk until it is understood."""
    if isinstance(getattr(client.api, "_custom_adapter", None), UnixHTTPAdapter):
        client.api.trust_env = False
    return client


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


_down_since: float | None = None
_answered_at = float("-inf")
#: how long an answer counts for a trial about to start (``recent_ok``): at 4 trials at a time a
#: trial starts about every 0.2 s, each of which pinged the engine (1.1 Docker calls a trial)
ANSWER_FRESH_SEC = 1.0


def wait_for_engine(max_wait: float = ENGINE_WAIT_SEC, poll: float = 0.5, *, recent_ok: bool = False) -> bool:
    """True as soon as the engine answers a ping (at once when it is up, ~2 ms); False once it
    has not answered for ``max_wait`` seconds.

    The outage is timed from when any thread first saw it, so a job whose engine is gone for good
    stops waiting trial by trial and records the rest at once, while a restart of a few seconds
    only pauses the trials (those in flight retry, queued ones start when it is back).
    ``recent_ok``: a ping answered in the last ``ANSWER_FRESH_SEC`` counts (a trial about to start;
    an outage since then fails its first call, which retries the trial as any engine error does);
    after a failure the engine is always asked again.
    """
    global _down_since, _answered_at
    if recent_ok and time.monotonic() - _answered_at < ANSWER_FRESH_SEC:
        return True
    while True:
        try:
            get_client().ping()
            with _lock:
                _down_since = None
                _answered_at = time.monotonic()
            return True
        except (*DOCKER_ERRORS, DockerUnavailableError):
            pass
        with _lock:
            if _down_since is None:
                _down_since = time.monotonic()
            _answered_at = float("-inf")
            waited = time.monotonic() - _down_since
        if waited >= max_wait:
            return False
        interrupts.check()
        time.sleep(poll)
