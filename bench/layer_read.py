"""What the judge's evidence about the agent's changes costs per trial: ``docker diff`` (the old
way) against reading the container's writable layer from the host (``runner_use``: walk, roles,
atime reset, then the second reading), on the base image and on a ~2 GB image, after the same
agent work; the plain Docker CLI floor of a trial (run -d, two exec, rm -f) measured in the
same run for scale.

Usage: .venv/bin/python bench/layer_read.py [--big-gb 2] [--repeat 5]
"""

from __future__ import annotations

import argparse
import base64
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tasks_lib.container.docker_client import get_client  # noqa: E402
from tasks_lib.judge.runner_use import runner_evidence, watch_runner  # noqa: E402

BASE = "tbflow/base:bookworm"
BIG = "tbflow-bench/layer-read-big:1"
LABEL = "tbflow.bench=layer-read"
#: an agent's usual footprint: a project in /app and a pip install of ~2000 files
AGENT_WORK = ("mkdir -p /app/src && for i in $(seq 300); do echo x > /app/src/m$i.py; done; "
              "d=/usr/local/lib/python3.11/dist-packages; for p in $(seq 40); do mkdir -p $d/pkg$p; "
              "for i in $(seq 50); do echo x > $d/pkg$p/mod$i.py; done; done; "
              "printf '#!/bin/sh\\n' > /usr/local/bin/tool; chmod 755 /usr/local/bin/tool")


def build_big(gb: float) -> None:
    files = 40000
    size = int(gb * 2**30 / files)
    code = (f"import os\nfor d in range(400):\n    os.makedirs(f'/opt/big/{{d}}', exist_ok=True)\n"
            f"    for i in range(100):\n        open(f'/opt/big/{{d}}/{{i}}.bin', 'wb').write(os.urandom({size}))\n")
    dockerfile = f"FROM {BASE}\nLABEL {LABEL}\nRUN echo {base64.b64encode(code.encode()).decode()} | base64 -d | python3\n"
    subprocess.run(["docker", "build", "-q", "-t", BIG, "-"], input=dockerfile, text=True, check=True,
                   capture_output=True)


def floor_cli(image: str) -> float:
    t = time.perf_counter()
    cid = subprocess.run(["docker", "run", "-d", "--init", "--network", "none", "--label", LABEL, image, "sleep",
                          "infinity"], check=True, capture_output=True, text=True).stdout.strip()
    subprocess.run(["docker", "exec", cid, "true"], check=True)
    subprocess.run(["docker", "exec", cid, "sh", "-c", "echo 1 > /tmp/reward.txt"], check=True)
    subprocess.run(["docker", "rm", "-f", cid], check=True, capture_output=True)
    return time.perf_counter() - t


def measure(image: str, repeat: int) -> dict:
    api = get_client().api
    diff_s, layer_s, floor_s = [], [], []
    for _ in range(repeat):
        cid = api.create_container(image, ["sleep", "infinity"], labels={"tbflow.bench": "layer-read"},
                                   host_config=api.create_host_config(network_mode="none", init=True))["Id"]
        try:
            api.start(cid)
            api.exec_start(api.exec_create(cid, ["sh", "-c", AGENT_WORK])["Id"])
            t = time.perf_counter()
            api.diff(cid)
            diff_s.append(time.perf_counter() - t)
            inspect = api.inspect_container(cid)
            t = time.perf_counter()
            ev = runner_evidence(watch_runner(cid, inspect), 0, time.time_ns())
            layer_s.append(time.perf_counter() - t)
            assert ev.source == "upperdir", ev.problem
        finally:
            api.remove_container(cid, force=True)
        floor_s.append(floor_cli(image))
    med = statistics.median
    return {"image": image, "docker_diff_ms": round(med(diff_s) * 1000, 1),
            "layer_read_ms": round(med(layer_s) * 1000, 1), "floor_cli_ms": round(med(floor_s) * 1000, 1),
            "diff_over_floor": round(med(diff_s) / med(floor_s), 3),
            "layer_over_floor": round(med(layer_s) / med(floor_s), 3)}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--big-gb", type=float, default=2.0)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    build_big(args.big_gb)
    try:
        rows = [measure(BASE, args.repeat), measure(BIG, args.repeat)]
    finally:
        subprocess.run(["docker", "rmi", "-f", BIG], capture_output=True)
    print(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
