"""Client CPU of one Docker API call through the SDK, as docker-py sets its client up and as
tbflow's ``get_client`` does (no proxy variables read per call; tasks_lib/container/docker_client.py).
Each call asks for a container that does not exist (a 404: the engine's work is the smallest
there is), under a new name each time, as a trial's calls name a new container or exec.

Usage: .venv/bin/python bench/docker_call_cost.py [--calls 1500]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import docker  # noqa: E402

from tasks_lib.container import docker_client  # noqa: E402


def per_call_ms(api, calls: int) -> float:
    t = time.process_time()
    for i in range(calls):
        try:
            api.inspect_container(f"tbflow-bench-absent-{i}")
        except docker.errors.NotFound:
            pass
    return 1000 * (time.process_time() - t) / calls


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--calls", type=int, default=1500)
    calls = ap.parse_args().calls
    out = {}
    for round_ in range(2):
        out[f"docker-py as set up, round {round_ + 1}"] = per_call_ms(
            docker.from_env(timeout=300, max_pool_size=64).api, calls)
        out[f"tbflow's client, round {round_ + 1}"] = per_call_ms(
            docker_client._one_pool_per_socket(docker.from_env(timeout=300, max_pool_size=64)).api, calls)
    print(json.dumps({k: round(v, 3) for k, v in out.items()}, indent=2))


if __name__ == "__main__":
    main()
