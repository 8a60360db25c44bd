"""How much memory tokenless requests make the job process hold through the model gateway (issue 29).

The gateway runs in this process, as in the process that runs a job; a client process opens N
connections to its socket, each declaring a 64 MiB body and sending all of it but its last byte,
without a token, and holds them open. The RSS of this process is read before and once every
connection was either refused or has sent everything it could. Run it from a checkout (the code
measured is the one on ``PYTHONPATH``, e.g. a worktree of an older commit for the baseline):

    PYTHONPATH=. .venv/bin/python bench/gateway_tokenless_rss.py --connections 16

``--token``: the same with one registered trial's token and 32 MiB bodies (the largest the
gateway takes), i.e. what one authenticated hostile trial can make the process hold.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

MIB = 1024 * 1024


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError("no VmRSS in /proc/self/status")


def _client(path: str, n: int, token: str) -> None:
    """N connections that each send a request (64 MiB without a token, 32 MiB with one) but its
    last byte, then hold."""
    body = 32 * MIB if token else 64 * MIB
    auth = f"Authorization: Bearer {token}\r\n" if token else ""
    head = (f"POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\nContent-Type: application/json\r\n{auth}"
            f"Content-Length: {body}\r\n\r\n").encode()
    payload = memoryview(head + b"x" * (body - 1))
    outcomes: list[str] = []
    sockets = []

    def one() -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.connect(path)
        sockets.append(s)
        try:
            s.sendall(payload)
            outcomes.append("sent")
        except OSError:
            outcomes.append("refused")

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    print(f"{outcomes.count('sent')} sent {outcomes.count('refused')} refused", flush=True)
    sys.stdin.readline()  # hold the connections until the server side has been measured


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--connections", type=int, default=16)
    ap.add_argument("--token", action="store_true", help="send with one registered trial's token")
    ap.add_argument("--client", help=argparse.SUPPRESS)
    ap.add_argument("--client-token", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.client:
        return _client(args.client, args.connections, args.client_token)
    from tasks_lib.gateway.model_gateway import ModelGateway, UpstreamConfig

    upstream = UpstreamConfig.from_env({"TBFLOW_OPENAI_BASE_URL": "http://127.0.0.1:9/v1", "OPENAI_API_KEY": "sk-x"})
    with tempfile.TemporaryDirectory() as tmp, ModelGateway(Path(tmp) / "gw" / "gw.sock", upstream) as gw:
        token = gw.register_trial("hostile") if args.token else ""
        before = _rss_mib()
        t0 = time.monotonic()
        client = subprocess.Popen([sys.executable, __file__, "--connections", str(args.connections),
                                   "--client", str(gw.socket_path), "--client-token", token],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert client.stdout is not None and client.stdin is not None
        line = client.stdout.readline().strip()
        held = _rss_mib()
        print(f"connections={args.connections} token={args.token} client: {line}; rss before {before:.0f} MiB, holding "
              f"{held:.0f} MiB, growth {held - before:.0f} MiB, {time.monotonic() - t0:.1f} s")
        client.stdin.write("\n")
        client.stdin.flush()
        client.wait()


if __name__ == "__main__":
    main()
