"""End to end without a network: a container with ``network_mode="none"`` and only the gateway
socket's directory mounted (read-only) reaches the mock model through ``tbflow-relay`` on its own
loopback, as a non-root user, with nothing but the trial token. The reply is the mock's, the
gateway counted it, the mock saw the real key; a half-closed connection still gets its whole
reply; SIGTERM stops the relay cleanly."""

import json
import time

import pytest

from conftest import BASE_IMAGE
from gateway_helpers import APIS, COMMAND, FINAL_TEXT, OPENAI_KEY, make_rig
from tasks_lib.container.archives import pack
from tasks_lib.gateway.relay_build import GATEWAY_CONTAINER_DIR, RELAY_CONTAINER_DIR, RELAY_NAME, ensure_relay_binary

pytestmark = pytest.mark.docker

PORT = 18080
RELAY = f"{RELAY_CONTAINER_DIR}/{RELAY_NAME}"
NOBODY = "65534:65534"

CLIENT = r"""
import json, socket, sys, urllib.request
port, token, stream_body, final_body = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4]
url = "http://127.0.0.1:%s/v1/chat/completions" % port

def post(body):
    req = urllib.request.Request(url, data=body.encode(), headers={
        "Authorization": "Bearer " + token, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=20) as r:
        return [r.status, r.headers.get("Content-Type"), r.read().decode()]

out = {"stream": post(stream_body), "final": post(final_body)}
s = socket.create_connection(("127.0.0.1", int(port)), timeout=20)
s.sendall(("POST /v1/chat/completions HTTP/1.1\r\nHost: relay\r\nAuthorization: Bearer %s\r\n"
           "Content-Type: application/json\r\nContent-Length: %d\r\n\r\n%s" % (token, len(final_body), final_body)).encode())
s.shutdown(socket.SHUT_WR)  # half-close: we are done sending, the reply must still come
data = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    data += chunk
out["half_close"] = data.decode()
out["interfaces"] = sorted(__import__("os").listdir("/sys/class/net"))
print(json.dumps(out))
"""

FIND_RELAY = r"""for p in /proc/[0-9]*; do
  [ "$(cat $p/comm 2>/dev/null)" = tbflow-relay ] || continue
  pp=$(sed -n 's/^PPid:[[:space:]]*//p' $p/status)
  [ "$(cat /proc/$pp/comm 2>/dev/null)" = tbflow-relay ] || echo ${p#/proc/}
done"""


def _exec(api, cid, argv, user="root"):
    exec_id = api.exec_create(cid, argv, user=user, stdout=True, stderr=True)["Id"]
    output = api.exec_start(exec_id, demux=True)
    stdout, stderr = (part.decode() if part else "" for part in output)
    return api.exec_inspect(exec_id)["ExitCode"], stdout, stderr


def test_chat_completion_from_networkless_container_through_relay(docker_ready, tmp_path):
    client = docker_ready
    api = client.api
    binary = ensure_relay_binary()
    with make_rig(tmp_path) as rig:
        token = rig.gateway.register_trial("trial-in-container")
        container = client.containers.run(
            BASE_IMAGE, ["sleep", "infinity"], init=True, detach=True, network_mode="none",
            labels={"tbflow": "1", "tbflow.test": "gateway"},
            volumes={str(rig.socket_path.parent): {"bind": GATEWAY_CONTAINER_DIR, "mode": "ro"}})
        try:
            assert container.attrs["HostConfig"]["NetworkMode"] == "none"
            assert api.put_archive(container.id, "/", pack([(binary.parent, RELAY_CONTAINER_DIR)],
                                                           dirs=[("/opt/tbflow", 0o755)]))
            relay_exec = api.exec_create(container.id, [RELAY, str(PORT), f"{GATEWAY_CONTAINER_DIR}/gw.sock"],
                                         user=NOBODY, stdin=False, stdout=False, stderr=False)["Id"]
            api.exec_start(relay_exec, detach=True)
            code, _, err = _exec(api, container.id, [RELAY, "--wait", str(PORT), "5"], user=NOBODY)
            assert code == 0, err

            chat = APIS[1]
            code, out, err = _exec(api, container.id, [
                "python3", "-c", CLIENT, str(PORT), token,
                json.dumps(chat.body("tool", True)), json.dumps(chat.body("final", False))], user=NOBODY)
            assert code == 0, err
            result = json.loads(out)
            status, ctype, stream_text = result["stream"]
            assert (status, ctype) == (200, "text/event-stream")
            assert COMMAND in stream_text and stream_text.endswith("data: [DONE]\n\n")
            status, ctype, final_text = result["final"]
            assert status == 200 and json.loads(final_text)["choices"][0]["message"]["content"] == FINAL_TEXT
            head, body = result["half_close"].split("\r\n\r\n", 1)
            assert head.startswith("HTTP/1.1 200 ")
            assert json.loads(body)["choices"][0]["message"]["content"] == FINAL_TEXT
            assert result["interfaces"] == ["lo"]

            usage = rig.gateway.usage("trial-in-container")
            assert (usage.requests, usage.input_tokens, usage.output_tokens) == (3, 120 + 160 + 160, 15 + 5 + 5)
            seen = rig.mock.requests
            assert [r["reply"] for r in seen] == ["tool", "final", "final"]
            assert all(r["headers"]["authorization"] == f"Bearer {OPENAI_KEY}" for r in seen)
            assert all(token not in json.dumps(r["headers"]) for r in seen)

            code, pids, _ = _exec(api, container.id, ["/bin/sh", "-c", FIND_RELAY])
            assert code == 0 and len(pids.split()) == 1, pids
            assert _exec(api, container.id, ["/bin/sh", "-c", f"kill -TERM {pids.strip()}"])[0] == 0
            deadline = time.monotonic() + 5
            while api.exec_inspect(relay_exec)["Running"] and time.monotonic() < deadline:
                time.sleep(0.05)
            assert api.exec_inspect(relay_exec)["ExitCode"] == 0
            assert _exec(api, container.id, [RELAY, "--wait", str(PORT), "0.3"])[0] == 1
        finally:
            container.remove(force=True, v=True)
