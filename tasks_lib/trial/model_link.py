"""The path from a model harness inside a networkless container to the model, for one trial.

CLI → ``http://127.0.0.1:RELAY_PORT`` (the container's own loopback) → ``tbflow-relay`` (a static
binary uploaded per trial) → the job gateway's unix socket, bind-mounted read-only at
``GATEWAY_CONTAINER_DIR`` → the host gateway, which swaps the per-trial token for the real key.

The link is opened right before the agent starts and closed right after it ends: the relay is
stopped and the token revoked, so neither the verifier nor anything the agent left running can
reach the model afterwards, and the relay is not mistaken for an agent process.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
from pathlib import Path

from tasks_lib.trial.harness_api import ModelAccess
from tasks_lib.trial.host_agent_api import HostModelAccess
from tasks_lib.errors import ContainerError
from tasks_lib.gateway.gateway_config import UpstreamConfig
from tasks_lib.gateway.gateway_usage import GatewayUsage
from tasks_lib.gateway.gateway_policy import TrialScope
from tasks_lib.gateway.model_gateway import ModelGateway
from tasks_lib.gateway.relay_build import GATEWAY_CONTAINER_DIR, RELAY_CONTAINER_DIR, RELAY_NAME, ensure_relay_binary
from tasks_lib.container.sandbox import Sandbox

#: an uncommon port, so a task's own service (8000, 8080, 5000, ...) does not collide with it
RELAY_PORT = 41731
RELAY_LOG = f"{RELAY_CONTAINER_DIR}/relay.log"
SOCKET_NAME = "gw.sock"

_gateways: dict[str, ModelGateway] = {}
#: container id → the relay's session id (from the launcher's report)
_relay_sessions: dict[str, int] = {}
_lock = threading.Lock()


def gateway_socket_dir(job_id: str) -> Path:
    """This process's gateway socket directory for ``job_id``: on the local disk, never in the job
    directory, which may be on a filesystem other machines share (a unix socket serves only its
    own host, and two workers of one job must not bind the same path)."""
    return Path(tempfile.gettempdir()) / f"tbflow-gw-{job_id}-{os.getpid()}"


def start_job_gateway(job_id: str, job_dir: Path, upstream: UpstreamConfig) -> ModelGateway:
    """Start (once per process) the gateway that serves this machine's trials of ``job_id``.

    Its request log is ``JOB_DIR/gateway/<host>-<pid>.jsonl``: one file per gateway, so workers
    sharing the job directory never append to the same file.
    """
    with _lock:
        gw = _gateways.get(job_id)
        if gw is None:
            log = job_dir / "gateway" / f"{socket.gethostname()}-{os.getpid()}.jsonl"
            log.parent.mkdir(parents=True, exist_ok=True)
            gw = ModelGateway(gateway_socket_dir(job_id) / SOCKET_NAME, upstream, log_path=log).start()
            _gateways[job_id] = gw
        return gw


def stop_job_gateway(job_id: str) -> None:
    with _lock:
        gw = _gateways.pop(job_id, None)
    if gw is not None:
        gw.stop()
        try:
            gw.socket_path.parent.rmdir()
        except OSError:  # not empty or gone: left for the next run of this process id to reuse
            pass


def job_gateway(job_id: str) -> ModelGateway:
    with _lock:
        gw = _gateways.get(job_id)
    if gw is None:
        raise ContainerError("run-agent", f"no model gateway is running for job {job_id}")
    return gw


def gateway_mounts(job_id: str) -> dict[str, str]:
    """The bind mount a model harness's container needs: the gateway socket's directory.

    Absolute: Docker refuses a relative host path, and the default ``--jobs-dir`` is ``jobs``.
    """
    return {str(job_gateway(job_id).socket_path.parent.resolve()): GATEWAY_CONTAINER_DIR}


def open_link(sandbox: Sandbox, job_id: str, trial_id: str, model: str, wire_api: str | None,
              record_to: Path) -> ModelAccess:
    gw = job_gateway(job_id)
    relay = ensure_relay_binary()
    sandbox.upload_dirs([(relay.parent, RELAY_CONTAINER_DIR)], "run-agent")
    relay_bin = f"{RELAY_CONTAINER_DIR}/{RELAY_NAME}"
    _, sid = sandbox.launch([relay_bin, str(RELAY_PORT), f"{GATEWAY_CONTAINER_DIR}/{SOCKET_NAME}"], RELAY_LOG, None,
                            "run-agent", user="root")
    _relay_sessions[sandbox.id] = sid
    code, out = sandbox.run_tool([relay_bin, "--wait", str(RELAY_PORT), "5"], "run-agent")
    if code != 0:
        raise ContainerError("run-agent", f"model relay did not start on 127.0.0.1:{RELAY_PORT}: {out.strip()[-300:]}")
    return ModelAccess(base_url=f"http://127.0.0.1:{RELAY_PORT}", **_trial_access(gw, trial_id, model, wire_api, record_to))


def _trial_access(gw, trial_id: str, model: str, wire_api: str | None, record_to: Path) -> dict[str, str]:
    """The per-trial token and ``PROVIDER/MODEL`` split, as every way to the model gives them.

    The token serves only the harness's wire API and this model (``gateway_policy``); a harness
    that names no wire API (a plug-in may not) gets a token for every configured upstream. The
    trial's model exchange is recorded to ``record_to`` (on the host, outside anything mounted).
    """
    provider, _, name = model.partition("/")
    scope = TrialScope.of(wire_api, model) if wire_api and model else None
    return {"token": gw.register_trial(trial_id, scope, record_to), "provider": provider, "model": name or provider}


def close_link(sandbox: Sandbox, job_id: str, trial_id: str) -> GatewayUsage:
    """Stop the relay and revoke the token; return what the gateway counted for the trial."""
    usage = job_gateway(job_id).unregister_trial(trial_id)
    # The relay runs in a session of its own (the launcher reported its id); killing the session
    # also ends the per-connection children still holding a hung request.
    sid = _relay_sessions.pop(sandbox.id, None)
    try:
        if sid is not None:
            sandbox.processes("run-agent", [sid])
    except ContainerError:
        pass  # the container stopped (the agent may stop its own): the relay ended with it
    return usage


#: the host part of a host agent's base URL: requests go over the socket, the name is never resolved
HOST_GATEWAY_URL = "http://tbflow-gateway"


def open_host_link(job_id: str, trial_id: str, model: str, wire_api: str | None,
                   record_to: Path) -> HostModelAccess:
    """A host-side agent's way to the model: the job gateway's socket on this host and a per-trial
    token, good until ``close_host_link`` (no relay: nothing in the container reaches the model)."""
    gw = job_gateway(job_id)
    return HostModelAccess(base_url=HOST_GATEWAY_URL, socket_path=gw.socket_path,
                           **_trial_access(gw, trial_id, model, wire_api, record_to))


def close_host_link(job_id: str, trial_id: str) -> GatewayUsage:
    """Revoke the trial's token; return what the gateway counted for it."""
    return job_gateway(job_id).unregister_trial(trial_id)
