"""What tbflow costs per trial, side by side with the plain Docker CLI floor, in one run (issue 28).

Rows (oracle on trivial tasks whose images are built, ``tbflow run`` as a user runs it):
  per-trial overhead at c=1: (wall of a job of 11 trials − wall of a job of 1) / 10, against the
      floor of one trial (``docker run -d --init``, two ``docker exec``, ``docker rm -f``);
  big job: wall of TASKS × ATTEMPTS trials at concurrency C, against the same CLI sequences run
      C at a time;
  CPU per trial: CPU time of every tbflow process (the command, its Prefect server, all their
      children: one cpuacct cgroup they run in; dockerd and the containers are not in it) over
      the big job, / trials.

Usage: .venv/bin/python bench/judge_cost.py [--tasks 89] [--attempts 5] [--concurrency 4] [--profile OUT]
  --profile OUT: run the big job under cProfile (in-process trial work) and write the stats there.
Needs root (a cgroup of its own); targets: overhead ≤ 1.5×, big job ≤ 1.5×, ≤ 0.10 CPU-s per trial.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT / "tests"))

from task_factory import make_task  # noqa: E402
from trial_overhead import floor_cli  # noqa: E402

CGROUP = Path("/sys/fs/cgroup/cpuacct")


def dataset(root: Path, tasks: int) -> Path:
    for i in range(tasks):
        make_task(root, f"t{i:03d}", solve="echo done > /app/done.txt\n", check="[ -f /app/done.txt ]")
    return root


def tbflow_run(ds: Path, jobs: Path, name: str, env: dict, *args: str, cgroup: Path | None = None) -> float:
    cmd = [sys.executable, "-m", "flows.cli", "run", str(ds), "--jobs-dir", str(jobs), "--job-name", name, *args]
    if os.environ.get("JUDGE_COST_PROFILE") and cgroup is not None:
        cmd = [sys.executable, "-m", "cProfile", "-o", os.environ["JUDGE_COST_PROFILE"], "-m", "flows.cli", *cmd[3:]]

    def enter_cgroup() -> None:
        if cgroup is not None:
            (cgroup / "cgroup.procs").write_text(str(os.getpid()))

    t = time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, preexec_fn=enter_cgroup)
    wall = time.perf_counter() - t
    if done.returncode != 0:
        raise SystemExit(f"tbflow failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}")
    return wall


def stop_server(env: dict) -> None:
    subprocess.run([sys.executable, "-m", "flows.cli", "server", "stop"], cwd=ROOT, env=env, capture_output=True)


def floor_parallel(image: str, n: int, concurrency: int) -> float:
    t = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda _: floor_cli(image, 1), range(n)))
    return time.perf_counter() - t


def image_of(jobs: Path, name: str) -> str:
    trial = next((jobs / name / "trials").iterdir())
    return json.loads((trial / "trial.json").read_text())["image"]["tag"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=89)
    ap.add_argument("--attempts", type=int, default=5)
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--profile", default="")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="tbflow-judge-cost-"))
    env = dict(os.environ, PREFECT_HOME=str(work / "prefect-home"))
    env.pop("PREFECT_API_URL", None)
    ds = dataset(work / "ds", args.tasks)
    one = work / "one"
    make_task(one, "t000", solve="echo done > /app/done.txt\n", check="[ -f /app/done.txt ]")
    jobs = work / "jobs"
    tbflow_run(ds, jobs, "warm-up", env, "--concurrency", str(args.concurrency))  # images, database, server
    image = image_of(jobs, "warm-up")
    single = [tbflow_run(one, jobs, f"one-{i}", env) for i in range(3)]
    eleven = [tbflow_run(one, jobs, f"eleven-{i}", env, "--attempts", "11") for i in range(3)]
    floor = [floor_cli(image, 1)[0] for _ in range(11)]
    per_trial = (statistics.median(eleven) - statistics.median(single)) / 10
    stop_server(env)  # the big job starts a server of its own, inside the cgroup, stopped with it
    cgroup = CGROUP / f"tbflow-bench-{os.getpid()}"
    cgroup.mkdir()
    n = args.tasks * args.attempts
    try:
        big_env = dict(env, **({"JUDGE_COST_PROFILE": args.profile} if args.profile else {}))
        big = tbflow_run(ds, jobs, "big", big_env, "--attempts", str(args.attempts), "--concurrency",
                         str(args.concurrency), cgroup=cgroup)
        cpu = int((cgroup / "cpuacct.usage").read_text()) / 1e9
    finally:
        for pid in (cgroup / "cgroup.procs").read_text().split():  # only what this bench started is in there
            subprocess.run(["kill", pid], capture_output=True)
        while (cgroup / "cgroup.procs").read_text().strip():
            time.sleep(0.1)
        cgroup.rmdir()
    big_floor = floor_parallel(image, n, args.concurrency)
    print(json.dumps({
        "overhead_c1": {"tbflow_s": round(per_trial, 3), "floor_s": round(statistics.median(floor), 3),
                        "ratio": round(per_trial / statistics.median(floor), 2)},
        f"job_{n}_c{args.concurrency}": {"tbflow_s": round(big, 1), "floor_s": round(big_floor, 1),
                                          "ratio": round(big / big_floor, 2)},
        "cpu_per_trial_s": round(cpu / n, 3),
    }, indent=2))


if __name__ == "__main__":
    main()
