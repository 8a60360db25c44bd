"""One trial container cannot take the gateway socket's connections from the others: the kernel
tells which container connected (SO_PEERCRED, its cgroup) before a byte is sent, and connections
past the container's bound are closed at once, while other peers still get in."""

from __future__ import annotations

import json

import pytest

from conftest import BASE_IMAGE
from gateway_helpers import APIS, make_rig
from tasks_lib.gateway.gateway_limits import GatewayLimits
from tasks_lib.gateway.gateway_peers import container_of_cgroup
from tasks_lib.gateway.relay_build import GATEWAY_CONTAINER_DIR

pytestmark = pytest.mark.docker

ID = "0123456789abcdef" * 4
#: opens N connections and holds them all, then asks on each: answered (401) or closed at once
GRAB = r"""
import json, socket, sys
held = []
for _ in range(int(sys.argv[1])):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(60)
    s.connect("/opt/tbflow/gateway/gw.sock")
    held.append(s)
out = []
for s in held:
    try:
        s.sendall(b"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Length: 2\r\n\r\n{}")
        out.append(s.recv(12).decode())
    except OSError:
        out.append("")
print(json.dumps(out))
"""


def test_cgroup_texts_name_the_container():
    assert container_of_cgroup(f"12:pids:/docker/{ID}\n1:name=systemd:/docker/{ID}\n") == ID
    assert container_of_cgroup(f"0::/system.slice/docker-{ID}.scope\n") == ID
    assert container_of_cgroup("0::/user.slice/user-0.slice/session-1.scope\n") is None


def test_connections_past_a_containers_bound_are_closed_and_others_get_in(docker_ready, tmp_path):
    with make_rig(tmp_path, limits=GatewayLimits(per_container_connections=4)) as rig:
        container = docker_ready.containers.run(
            BASE_IMAGE, ["sleep", "infinity"], init=True, detach=True, network_mode="none",
            labels={"tbflow": "1", "tbflow.test": "gateway"},
            volumes={str(rig.socket_path.parent): {"bind": GATEWAY_CONTAINER_DIR, "mode": "ro"}})
        try:
            code, out = container.exec_run(["python3", "-c", GRAB, "10"], user="65534:65534")
            assert code == 0, out
            answers = json.loads(out)
            assert answers.count("HTTP/1.1 401") == 4 and answers.count("") == 6, answers
            token = rig.gateway.register_trial("t")  # a peer outside that container still gets in
            with rig.client() as client:
                assert client.post(APIS[1].path, headers=APIS[1].headers(token),
                                   json=APIS[1].body("tool", False)).status_code == 200
        finally:
            container.remove(force=True, v=True)
