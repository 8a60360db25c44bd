"""An agent inside its networkless trial container, with its trial's token and the job gateway's
socket mounted as in a job (``model_link``): a body without a token is refused before it is
read, another provider or another model is refused with evidence in the trial's usage, and once
the agent stage ended (``close_link``) the same token, straight on the mounted socket, is refused
too. The trial's own model still answers through the relay."""

from __future__ import annotations

import json
import uuid

import pytest

from gateway_helpers import COMMAND, FINAL_TEXT, upstream_for
from mock_model import MockModel

pytestmark = pytest.mark.docker

MODEL = "openai/gpt-test"
#: run inside the container as the agent would: raw HTTP, to the relay or straight to the socket
AGENT = r"""
import json, socket, sys
mode, token = sys.argv[1], sys.argv[2]

def talk(head, body, unix):
    s = socket.socket(socket.AF_UNIX if unix else socket.AF_INET)
    s.settimeout(60)
    s.connect("/opt/tbflow/gateway/gw.sock" if unix else ("127.0.0.1", 41731))
    try:
        s.sendall(head + body)
    except OSError:
        pass
    data = b""
    try:
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    except OSError:
        pass
    return int(data.split(b" ")[1]) if data.startswith(b"HTTP/1.1 ") else 0

def post(path, body, auth, unix=False, declared=None):
    head = ("POST %s HTTP/1.1\r\nHost: relay\r\nConnection: close\r\nContent-Type: application/json\r\n%s"
            "Content-Length: %d\r\n\r\n" % (path, auth, len(body) if declared is None else declared)).encode()
    return talk(head, body, unix)

chat = json.dumps({"model": "gpt-test", "messages": [{"role": "user", "content": "hi"}]}).encode()
other = json.dumps({"model": "gpt-expensive", "messages": [{"role": "user", "content": "hi"}]}).encode()
claude = json.dumps({"model": "claude-opus", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]}).encode()
bearer, x_api_key = "Authorization: Bearer %s\r\n" % token, "x-api-key: %s\r\n" % token
if mode == "during":
    out = {"tokenless_64mib": post("/v1/chat/completions", b"x" * 65536, "", declared=64 << 20),
           "other_provider": post("/v1/messages", claude, x_api_key),
           "other_model": post("/v1/chat/completions", other, bearer),
           "own_model": post("/v1/chat/completions", chat, bearer)}
else:
    out = {"after_stage": post("/v1/chat/completions", chat, bearer, unix=True)}
print(json.dumps(out))
"""


def test_agent_reaches_only_its_own_model_and_only_during_its_stage(docker_ready, tmp_path):
    from tasks_lib.container.docker_client import LABEL_JOB_DIR
    from tasks_lib.container.sandbox import Sandbox
    from tasks_lib.task.task_model import EnvironmentConfig
    from tasks_lib.trial.model_link import close_link, gateway_mounts, open_link, start_job_gateway, stop_job_gateway

    job_id, trial = uuid.uuid4().hex[:12], "hostile.gateway.1"
    with MockModel(COMMAND, final_text=FINAL_TEXT, log_path=tmp_path / "mock.jsonl") as mock:
        start_job_gateway(job_id, tmp_path / "job", upstream_for(mock))
        try:
            box = Sandbox.start("tbflow/base:bookworm", EnvironmentConfig(), job_id, trial, mounts=gateway_mounts(job_id),
                                labels={LABEL_JOB_DIR: str((tmp_path / "jobs").resolve())})
            try:
                access = open_link(box, job_id, trial, MODEL, "openai-chat", tmp_path / "model-exchange.jsonl")
                code, out = box.run_tool(["/usr/bin/python3", "-c", AGENT, "during", access.token], "run-agent",
                                         user="65534:65534", timeout=120)
                assert code == 0, out
                assert json.loads(out) == {"tokenless_64mib": 401, "other_provider": 403, "other_model": 403,
                                           "own_model": 200}
                usage = close_link(box, job_id, trial)  # the agent stage ended
                code, out = box.run_tool(["/usr/bin/python3", "-c", AGENT, "after", access.token], "run-verifier",
                                         user="65534:65534", timeout=120)
                assert code == 0, out
                assert json.loads(out) == {"after_stage": 401}
            finally:
                box.remove()
        finally:
            stop_job_gateway(job_id)
    assert [r["body"]["model"] for r in mock.requests] == ["gpt-test"]  # nothing else reached a key
    assert usage.errors == {403: 2} and usage.responses_with_usage == 1
    assert [(e.asked_family, e.asked_model) for e in usage.refused] == [("anthropic", None), ("openai", "gpt-expensive")]
