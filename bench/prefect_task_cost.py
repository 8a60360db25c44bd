"""What one Prefect task run costs in CPU, on the client and on the server (issue 28).

A tbflow trial is 7 task runs (the ``trial`` task and its six stages, the design card's DAG). This
runs N task runs that do nothing, inside one flow against a Prefect server of their own (Prefect's
ephemeral server: the same server code tbflow's local server runs, with the same settings:
event persister and triggers off, recorder batches of 100), and reads the CPU time of this process
(the client: task engine, events worker) and of the server process (event ingest, the task-run
recorder, SQLite) from /proc, before and after. The server's share is read after it has recorded
every task run as completed (a count in its database), minus its idle CPU over the same wait.

Variants, each a fresh process:
  plain:  task runs with a short name and one small parameter;
  tagged: the same under four tags (a trial's stages carry job:, dataset:, model:, harness:), so
          Prefect's tag-concurrency check runs for each;
  shaped: a trial stage's real parameters (a TrialSpec and a loaded Task);
  quoted: the same parameters wrapped in Prefect's ``quote`` (not walked for futures).

Usage: .venv/bin/python bench/prefect_task_cost.py [--runs 400] [--variants plain,tagged,shaped,quoted]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SERVER_SETTINGS = {
    "PREFECT_LOGGING_LEVEL": "WARNING", "PREFECT_LOGGING_TO_API_ENABLED": "false", "DO_NOT_TRACK": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false", "PREFECT_SERVER_SERVICES_EVENT_PERSISTER_ENABLED": "false",
    "PREFECT_SERVER_SERVICES_TRIGGERS_ENABLED": "false", "PREFECT_SERVER_SERVICES_TASK_RUN_RECORDER_BATCH_SIZE": "100",
}


def _cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        p = todo.pop()
        for tid in os.listdir(f"/proc/{p}/task"):
            try:
                kids = [int(k) for k in Path(f"/proc/{p}/task/{tid}/children").read_text().split()]
            except OSError:
                continue
            found += kids
            todo += kids
    return found


def _server_cpu() -> float:
    return sum(_cpu(k) for k in _descendants(os.getpid()))


def _wait_recorded(expected: int) -> None:
    from prefect.client.orchestration import get_client

    with get_client(sync_client=True) as client:
        for _ in range(600):
            done = client._client.post("/task_runs/count", json={"task_runs": {"state": {"type": {"any_": ["COMPLETED"]}}}})
            if done.json() >= expected:
                return
            time.sleep(0.2)
    raise SystemExit(f"the server recorded fewer than {expected} task runs")


def child(variant: str, runs: int) -> dict:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "tests"))
    from prefect import flow, tags, task
    from prefect.cache_policies import NO_CACHE

    @task(name="noop", task_run_name="{name} · stage", cache_policy=NO_CACHE, persist_result=False)
    def noop(name: str, spec=None, task_=None) -> int:
        return 1

    args: dict = {}
    if variant in ("shaped", "quoted"):
        from task_factory import make_task

        from tasks_lib.records.record_models import TrialSpec
        from tasks_lib.task.task_loader import load_task

        task_dir = make_task(Path(tempfile.mkdtemp()), "t")
        args = {"task_": load_task(task_dir),
                "spec": TrialSpec(trial_id="t.oracle.1", task_name="t", task_path=str(task_dir), harness="oracle",
                                  attempt=1, job_id="bench")}
        if variant == "quoted":
            from prefect.utilities.annotations import quote

            args = {k: quote(v) for k, v in args.items()}

    @flow
    def many() -> dict:
        for i in range(20):  # warm-up: connections, caches, the server's first writes
            noop(f"w{i}", **args)
        _wait_recorded(20)
        client0, server0, t0 = time.process_time(), _server_cpu(), time.monotonic()
        with tags(*(["job:j", "dataset:d", "model:m", "harness:h"] if variant == "tagged" else [])):
            for i in range(runs):
                noop(f"t{i}", **args)
        client1 = time.process_time()
        _wait_recorded(20 + runs)
        server1, t1 = _server_cpu(), time.monotonic()
        time.sleep(3)  # the server's idle CPU rate (its service loops), taken off over the run's span
        idle = (_server_cpu() - server1) / (time.monotonic() - t1) * (t1 - t0)
        return {"client_ms": 1000 * (client1 - client0) / runs,
                "server_ms": 1000 * max(0.0, server1 - server0 - idle) / runs}

    return many()


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=400)
    ap.add_argument("--child", default="")
    ap.add_argument("--variants", default="plain,tagged,shaped,quoted")
    args = ap.parse_args()
    if args.child:
        print(json.dumps(child(args.child, args.runs)))
        return
    out = {}
    for variant in args.variants.split(","):
        env = dict(os.environ, PREFECT_HOME=tempfile.mkdtemp(prefix="tbflow-bench-prefect-"), **SERVER_SETTINGS)
        env.pop("PREFECT_API_URL", None)
        done = subprocess.run([sys.executable, __file__, "--runs", str(args.runs), "--child", variant], env=env,
                              capture_output=True, text=True, cwd=ROOT)
        if done.returncode != 0:
            raise SystemExit(f"{variant} failed:\n{done.stderr[-3000:]}")
        r = json.loads(done.stdout.strip().splitlines()[-1])
        out[variant] = {k: round(v, 2) for k, v in r.items()}
        out[variant]["per_trial_ms (7 runs)"] = round(7 * (r["client_ms"] + r["server_ms"]), 1)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
